#pragma once
// Value validation of what Temper reads back (sessions, journal lines; profiles: profile.h): the JSON readers
// check structure and kinds; these check that the values make sense together (ranges, unique keys,
// winners backed by results, devices that exist). Every reader calls them, so no command and no
// GUI view works on numbers a sweep could not have produced. Error(BadInput) "<where>.<field>: ...".
#include <string>

namespace temper {

struct Session;
struct Result;
struct Confirmation;

// One result on its own (ranges and internal consistency); `where` names it ("s.json: results[3]").
void validate_result(const Result& r, const std::string& where);
// One confirmation on its own: ranges, its medians' statistics (positive, ordered) unless it
// failed, and `confirmed` only where the candidate's CI lies wholly below the default's.
void validate_confirmation(const Confirmation& c, const std::string& where);

// The whole session: every result, shape, winner, confirmation and device, and how they refer to
// each other.
void validate_session(const Session& s, const std::string& where);

}  // namespace temper
