// For process_test: prints the signal this process gets when its parent dies (PR_GET_PDEATHSIG, 0 for
// none), then its pid, then waits `seconds` (argv[1], default 0) for a test to end its parent.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  int sig = -1;
  if (::prctl(PR_GET_PDEATHSIG, &sig) != 0) return 1;
  std::printf("%d %d\n", sig, int(::getpid()));
  std::fflush(stdout);
  if (argc > 1) ::sleep(unsigned(std::atoi(argv[1])));
  return 0;
}
