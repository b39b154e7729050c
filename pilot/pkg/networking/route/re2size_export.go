package route

// RegexProgramSize is re2ProgramSize for the other translators that send
// safe_regex matchers (authorization policies), so that every regex Envoy
// would refuse for its size is caught before sending, by one estimate.
func RegexProgramSize(re string) (int, error) { return re2ProgramSize(re) }
