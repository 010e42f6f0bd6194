#include "temper/error.h"
#include "temper/profile.h"

namespace temper {

void require_valid_profile(const Profile& p, const std::string& where) {
  const std::vector<std::string> problems = validate_profile(p);
  if (problems.empty()) return;
  std::string more;
  if (problems.size() > 1) more = " (and " + std::to_string(problems.size() - 1) + " more; see temper profile validate)";
  fail(ErrorKind::BadInput, where + ": " + problems.front() + more);
}

}  // namespace temper
