// re2size prints RE2's ProgramSize() for each line of standard input, as
// Envoy's default regex engine computes it (RE2 built with RE2::Quiet). It
// is how the RE2 program sizes in
// pilot/pkg/networking/route/re2size_test.go were measured; it is not part
// of the build.
//
//   apt-get install libre2-dev g++
//   g++ -O1 -o /tmp/re2size tools/re2size/re2size.cc -lre2
//   printf '%s\n' 'a' '^/[^/]{1,45}/?$' | /tmp/re2size
#include <re2/re2.h>

#include <iostream>
#include <string>

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    re2::RE2 re(line, re2::RE2::Quiet);
    if (!re.ok()) {
      std::cout << "ERR\t" << line << "\n";
      continue;
    }
    std::cout << re.ProgramSize() << "\t" << line << "\n";
  }
}
