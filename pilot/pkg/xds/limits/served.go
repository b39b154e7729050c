package limits

import "time"

// The limits on names grow with what the server serves. A gateway's EDS
// request names every cluster and a proxyless client's requests every
// listener or route it uses: a fixed bound meant for hostile clients
// would, past some size of config, close a legitimate gateway's stream
// every time it asked (and again after each reconnect). So each count
// and byte bound on names is its flag plus ServedFactor times the largest
// set of the type any proxy was sent lately, and a name may be as long as
// the longest served one. What a client names beyond that is what the
// flags allow; what the server serves it holds itself already.

// ServedFactor leaves room for a delta client holding the names of a set
// being replaced and of its replacement at once (Envoy subscribes to new
// clusters' endpoints before it unsubscribes from old ones), and for a
// reconnecting client naming its initial resource versions beside its
// subscriptions.
const ServedFactor = 2

// servedHold is how long a set counts after it was last served: a client
// answering a response of a push since replaced by a smaller one is not
// cut off. The figure covers at least this long and at least the push
// before the current one.
const servedHold = time.Minute

// NameOverheadBytes is what holding one name costs besides its bytes: its
// string header in the request's list and its slot in a subscription's
// map (package wire counts the same for its shared lists).
const NameOverheadBytes = 64

// NameStat is the size of a set of names: how many, their bytes as
// counted by the byte limits, and the longest.
type NameStat struct {
	Count   int
	Bytes   int64
	Longest int
}

// Max is the larger of a and b in each figure.
func (a NameStat) Max(b NameStat) NameStat {
	return NameStat{Count: max(a.Count, b.Count), Bytes: max(a.Bytes, b.Bytes), Longest: max(a.Longest, b.Longest)}
}

// Served is, per served type URL, the largest set of it recently sent to
// any proxy (see servedHold). The zero value is ready; the server guards
// it with its own lock.
type Served struct {
	since     time.Time // when cur began; zero before the first push
	cur, prev map[string]NameStat
}

// Turn starts a new period at a push when the current one has lasted
// servedHold: what the period before noted stops counting.
func (s *Served) Turn(now time.Time) {
	if s.since.IsZero() || now.Sub(s.since) >= servedHold {
		s.prev, s.cur, s.since = s.cur, map[string]NameStat{}, now
	}
}

// Note notes a set of typeURL some proxy is sent.
func (s *Served) Note(typeURL string, st NameStat) {
	if s.cur == nil {
		s.cur = map[string]NameStat{}
	}
	s.cur[typeURL] = s.cur[typeURL].Max(st)
}

// Of returns the served figure of a type URL: zero for types the server
// does not serve.
func (s *Served) Of(typeURL string) NameStat {
	return s.cur[typeURL].Max(s.prev[typeURL])
}

// grown is a limit grown by what is served: limit + ServedFactor*served;
// a negative limit stays off.
func grown(limit int64, served int64) int64 {
	if limit < 0 {
		return limit
	}
	return limit + ServedFactor*served
}

// Names are the limits on names of one type as they stand now.
type Names struct {
	RequestNames, SubscribedNames int64
	Bytes                         int64
	NameBytes                     int
}

// Names returns the limits on names of a type of which served is served
// (Served.Of).
func (l *Limiter) Names(served NameStat) Names {
	n := Names{
		RequestNames:    grown(int64(l.opts.MaxResourceNamesPerRequest), int64(served.Count)),
		SubscribedNames: grown(int64(l.opts.MaxSubscribedNames), int64(served.Count)),
		Bytes:           grown(int64(l.opts.MaxSubscribedBytes), served.Bytes),
		NameBytes:       l.opts.MaxResourceNameBytes,
	}
	if n.NameBytes >= 0 {
		n.NameBytes = max(n.NameBytes, served.Longest)
	}
	return n
}
