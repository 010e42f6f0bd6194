#pragma once
// Strict reading of JSON objects with errors that name the file and the field path.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "temper/error.h"

namespace temper::json_read {

using nlohmann::json;

// A JSON value plus its path ("session.json: results[3].config") for messages.
struct Node {
  const json& value;
  std::string where;

  [[noreturn]] void bad(std::string_view expected) const {
    fail(ErrorKind::BadInput, where + ": expected " + std::string(expected) + ", found " +
                                  (value.is_discarded() ? "nothing" : std::string(value.type_name())));
  }
  const Node& object() const {
    if (!value.is_object()) bad("an object");
    return *this;
  }
  Node operator[](std::string_view key) const {
    object();
    auto it = value.find(key);
    if (it == value.end()) fail(ErrorKind::BadInput, where + ": missing field \"" + std::string(key) + "\"");
    return {*it, where + "." + std::string(key)};
  }
  bool has(std::string_view key) const { return value.is_object() && value.contains(key); }
  Node at(size_t i) const { return {value[i], where + "[" + std::to_string(i) + "]"}; }
  size_t size() const {
    if (!value.is_array()) bad("an array");
    return value.size();
  }
  bool is_null() const { return value.is_null(); }

  std::string str() const {
    if (!value.is_string()) bad("a string");
    return value.get<std::string>();
  }
  bool boolean() const {
    if (!value.is_boolean()) bad("true or false");
    return value.get<bool>();
  }
  double number() const {
    if (!value.is_number()) bad("a number");
    return value.get<double>();
  }
  int64_t int64() const {
    if (!value.is_number_integer()) bad("an integer");
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      bad("an integer within range");
    return value.get<int64_t>();
  }
  uint64_t uint64() const {
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0))
      bad("a non-negative integer");
    return value.get<uint64_t>();
  }
  int integer() const {
    const int64_t v = int64();
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) bad("a 32-bit integer");
    return static_cast<int>(v);
  }
};

}  // namespace temper::json_read
