// Issue 19 (13): the session reader used to accept anything that had the right JSON kinds. Each
// hostile value below was exit 0 (and a winner without a result was exported into the C++ header).
#include <gtest/gtest.h>

#include <functional>

#include "sample_session.h"
#include "temper/error.h"
#include "temper/session.h"
#include "temper/sweep.h"

namespace temper {
namespace {

using nlohmann::json;

// The sample session as saved, with winners derived as the sweep derives them.
json saved_sample() {
  Session s = test::sample_session();
  finish_session(s);
  return to_json(s);
}

// session_from_json must refuse the edited document with BadInput naming `fragment`.
void expect_rejected(const std::function<void(json&)>& edit, const std::string& fragment) {
  json j = saved_sample();
  edit(j);
  try {
    session_from_json(j, "s.json");
    ADD_FAILURE() << "accepted; expected an error containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(SessionValidation, TheSampleIsValid) {
  const json j = saved_sample();
  ASSERT_FALSE(j["winners"].empty());
  EXPECT_NO_THROW(session_from_json(j, "s.json"));
}

TEST(SessionValidation, NegativeOrDisorderedTimesAreRejected) {
  expect_rejected([](json& j) { j["results"][0]["time_us"]["median"] = -1; }, "s.json.results[0].time_us.median: expected a finite number > 0");
  expect_rejected([](json& j) { j["results"][0]["time_us"]["min"] = 1e6; }, "results[0].time_us: expected min <= median <= max");
}

TEST(SessionValidation, DimensionsNcolsAndConfigsInRange) {
  expect_rejected([](json& j) { j["results"][0]["n"] = -5; }, "results[0].n: expected 1..");
  expect_rejected([](json& j) { j["results"][0]["ncols"] = 1000; }, "results[0].ncols: expected 1..8, got 1000");
  expect_rejected([](json& j) { j["results"][0]["k"] = 4000; }, "results[0].k: expected a multiple of 256");
  expect_rejected([](json& j) { j["results"][0]["config"]["nwarps"] = 0; }, "results[0].config.nwarps");
  expect_rejected([](json& j) { j["shapes"][0]["n"] = 0; }, "shapes[0].n");
}

TEST(SessionValidation, ResultsReferToDevicesThatExist) {
  expect_rejected([](json& j) { j["results"][0]["device"] = 7; }, "results[0].device: no device 7 in the session");
  expect_rejected([](json& j) { j["devices"].push_back(j["devices"][0]); }, "devices[1].index: device 0 appears twice");
  expect_rejected([](json& j) { j["devices"][0]["copy_bandwidth_gbs"] = 0; },
                  "devices[0].copy_bandwidth_gbs: expected > 0 for a device with measured results");
}

TEST(SessionValidation, DuplicateResultKeysAreRejected) {
  expect_rejected([](json& j) { j["results"].push_back(j["results"][0]); }, "a second result for the same device, shape, ncols and config");
}

TEST(SessionValidation, WinnersMustBeBackedByResults) {
  expect_rejected(
      [](json& j) {
        for (auto& w : j["winners"])
          if (w["verdict"] == "winner") w["config"] = {{"nwarps", 1024}, {"rows_per_block", 1024}};
      },
      "no ok result behind 1024x1024");
  expect_rejected([](json& j) { j["winners"].push_back(j["winners"][0]); }, "a second verdict");
  expect_rejected([](json& j) { j["winners"][0]["verdict"] = "best"; }, "verdict: expected");
}

// (16) A profile opened as a session said `missing field "id"`.
TEST(SessionValidation, AProfileIsNamedAsSuch) {
  for (const json& j : {json{{"format", "temper-profile"}, {"schema_version", 1}, {"entries", json::array()}},
                        json{{"configs", json::object()}}}) {
    try {
      session_from_json(j, "p.json");
      ADD_FAILURE() << "a profile was read as a session";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("p.json: a tuning profile, not a sweep session"), std::string::npos) << e.what();
    }
  }
}

TEST(SessionValidation, HugeTextIsRejected) {
  expect_rejected([](json& j) { j["devices"][0]["info"]["name"] = std::string(100000, 'x'); },
                  "devices[0].name: text of 100000 bytes");
}

}  // namespace
}  // namespace temper
