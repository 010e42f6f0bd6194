// Myers' O(ND) line diff and the unified format's hunks.
#include "unified_diff.h"

#include <algorithm>
#include <vector>

namespace temper::engine {
namespace {

constexpr int kContext = 3;

// Each line with its newline (the last may have none).
std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t at = 0; at < s.size();) {
    const size_t nl = s.find('\n', at);
    const size_t end = nl == std::string_view::npos ? s.size() : nl + 1;
    out.push_back(s.substr(at, end - at));
    at = end;
  }
  return out;
}

struct Step {
  char kind;  // ' ' both, '-' only before, '+' only after
  int a, b;   // the line's index in before (' ', '-') and after (' ', '+')
};

// The shortest edit script: trace[d] keeps the furthest x on diagonals -d..d after d differences.
std::vector<Step> edit_script(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b) {
  const int n = int(a.size()), m = int(b.size()), off = n + m + 1;
  std::vector<int> v(size_t(2 * off + 1), 0);
  std::vector<std::vector<int>> trace;
  for (int d = 0; d <= n + m; ++d) {
    bool done = false;
    for (int k = -d; k <= d && !done; k += 2) {
      int x = (k == -d || (k != d && v[size_t(off + k - 1)] < v[size_t(off + k + 1)])) ? v[size_t(off + k + 1)] : v[size_t(off + k - 1)] + 1;
      int y = x - k;
      while (x < n && y < m && a[size_t(x)] == b[size_t(y)]) ++x, ++y;
      v[size_t(off + k)] = x;
      done = x >= n && y >= m;
    }
    trace.emplace_back(v.begin() + off - d, v.begin() + off + d + 1);
    if (done) break;
  }
  std::vector<Step> steps;
  int x = n, y = m;
  for (int d = int(trace.size()) - 1; d > 0; --d) {
    const std::vector<int>& prev = trace[size_t(d - 1)];
    const auto at = [&](int k) { return prev[size_t(k + d - 1)]; };
    const int k = x - y;
    const int pk = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
    const int px = at(pk), py = px - pk;
    while (x > px && y > py) steps.push_back({' ', --x, --y});
    if (x == px) steps.push_back({'+', x, --y});
    else steps.push_back({'-', --x, y});
  }
  while (x > 0 && y > 0) steps.push_back({' ', --x, --y});
  std::reverse(steps.begin(), steps.end());
  return steps;
}

std::string range(int start, int count) {
  // diff -u: a hunk of one line gives its number alone; an empty side, the line before it.
  if (count == 1) return std::to_string(start + 1);
  return std::to_string(count == 0 ? start : start + 1) + "," + std::to_string(count);
}

void add_line(std::string& out, char mark, std::string_view line) {
  out += mark;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

}  // namespace

std::string unified_diff(std::string_view before, std::string_view after, const std::string& old_name,
                         const std::string& new_name) {
  const std::vector<std::string_view> a = split_lines(before), b = split_lines(after);
  const std::vector<Step> steps = edit_script(a, b);
  std::string out;
  const int total = int(steps.size());
  for (int i = 0; i < total;) {
    if (steps[size_t(i)].kind == ' ') {
      ++i;
      continue;
    }
    // A hunk: from kContext lines before this change to kContext after the last change within 2*kContext of the next.
    const int first = std::max(0, i - kContext);
    int last = i;
    for (int j = i; j < total; ++j) {
      if (steps[size_t(j)].kind != ' ') last = j;
      else if (j - last > 2 * kContext) break;
    }
    const int end = std::min(total, last + kContext + 1);
    // Each step knows where it stands in both texts (an insertion: before which line of `before`).
    const int a_start = steps[size_t(first)].a, b_start = steps[size_t(first)].b;
    int a_count = 0, b_count = 0;
    for (int j = first; j < end; ++j) {
      a_count += steps[size_t(j)].kind != '+';
      b_count += steps[size_t(j)].kind != '-';
    }
    if (out.empty()) out = "--- " + old_name + "\n+++ " + new_name + "\n";
    out += "@@ -" + range(a_start, a_count) + " +" + range(b_start, b_count) + " @@\n";
    for (int j = first; j < end; ++j) {
      const Step& s = steps[size_t(j)];
      add_line(out, s.kind, s.kind == '+' ? b[size_t(s.b)] : a[size_t(s.a)]);
    }
    i = end;
  }
  return out;
}

}  // namespace temper::engine
