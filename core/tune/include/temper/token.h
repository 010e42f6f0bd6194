#pragma once
// Tune's token step (issue 46): the choices the replay made, confirmed or changed by whole decode
// tokens in the engine's own graph (the token probe, temper/token_probe.h), and the tg speedup the
// profile will give predicted the same way. The replay times a token's GEMVs back to back; the token
// probe runs them where llama-bench does — between the other kernels, under CUDA graphs and ggml's
// dependent launches, with the real expert routing — so what it says wins.
//
// Coordinates: the launch families the profile tunes at one column (mul_mat, mul_mat_glu, mul_mat_id,
// mul_mat_id_glu, each with its unfused and pipelined kinds) and the same-input groups, heaviest first
// by the token time the sweep measured for them. Each is measured as tuned and with the replay's
// choice taken back ("default": the engine's own config, pipelined where the profile pipelines it;
// "off" for groups), interleaved in one probe process; the alternative wins only when its CI lower
// bound beats the tuned one by --min-token-gain. Then stock against the final profile: the prediction.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/profile.h"

namespace temper::tune {

inline constexpr double kDefaultMinTokenGain = 0.005;

struct TokenCoordinate {
  std::string kind;      // "mul_mat", "mul_mat_glu", "mul_mat_id", "mul_mat_id_glu", "groups"
  int entries = 0;       // the profile's approved one-column entries it covers
  double weight_us = 0;  // their launches' engine-default µs a token, as the sweep measured them
  // "tuned" first, then "default" (families) or "off" (groups); "fused" for a gate/up run unfused
  std::vector<std::string> options;
  std::vector<std::vector<std::vector<double>>> samples;  // per option, per round: µs per token
  int chosen = 0;
  double speedup = 1, low = 1, high = 1;  // the best other option over "tuned" (µs tuned / µs other), 95 % CI
  std::string why;
  int norm_k = 0;        // a producer's: its row length (the norm's: the hidden size; the GLU's: the gate/up's n)
  std::vector<int> widths = {1};  // a producer's: the batch widths its "on" puts entries in (measured at the first)
};
// The coordinates of the producers that write their GEMVs' q8_1 activations: the norm (hook v8, launch
// rms_norm_q8_1) and the unfused gate/up pair's GLU (hook v9, glu_q8_1). Options "off" (the reference)
// and "on" (one approved entry for the model's norm or GLU at one column).
inline constexpr std::string_view kNormKind = "rms_norm_q8_1";
inline constexpr std::string_view kGluKind = "glu_q8_1";
inline bool is_producer_kind(std::string_view kind) { return kind == kNormKind || kind == kGluKind; }
// The coordinate of the unfused gate/up pair's two GEMVs as one same-input group launch (hook v9): "off",
// and "on" (a mul_mat_group entry of the pair's two members at one column, at the group-grid config
// nearest the pair's). Like the producers', a structure: three times the rounds.
inline constexpr std::string_view kPairGroupKind = "pair_group";
inline bool is_structure_kind(std::string_view kind) { return is_producer_kind(kind) || kind == kPairGroupKind; }

// What the token step writes before its reason in the notes of the entries it takes back or puts in.
inline constexpr std::string_view kTokenNote = "token probe: ";
// An entry a token step took back (rejected, its note starting with kTokenNote): still the replay's
// choice, measured again as "tuned" by the next token step.
bool token_rejected(const ProfileEntry& e);
// An entry a token step put in (approved, its note starting with kTokenNote): the fused gate/up at its
// best config where the replay chose the hook's unfused pair.
bool token_added(const ProfileEntry& e);
// `p` as the replay's steps left it: what token steps took back approved again, what they put in out.
// The steps before the token step see the profile this way (their inputs, what they record), so a
// re-run finds them unchanged.
// With `shapes` (a model's one-column launches, as token_coordinates takes them) only the entries of
// that model (of_model): a shared profile keeps what another model's token step decided.
Profile without_token(Profile p, const std::vector<ShapeKey>& shapes = {});
// Whether `e` belongs to the model whose one-column launches are `shapes` (every entry when empty): one of
// its GEMV launches in any form (unfused, pipelined, any batch width), a group of its launches, its norm
// (k: a gate/up's K) or its GLU (k: a gate/up's n).
bool of_model(const ProfileEntry& e, const std::vector<ShapeKey>& shapes);

// The coordinates of `p` for `arch`, heaviest first, at most `max` of them; with `shapes` (the model's
// one-column launches), only entries of those shapes count (a shared profile holds other models' too).
// `fused`: the sweep's best fused gate/up entries (approved, one column); a family whose profile runs
// the unfused pair where one of them exists gets the option "fused" too.
std::vector<TokenCoordinate> token_coordinates(const Profile& p, const std::string& arch, int max,
                                               const std::vector<ShapeKey>& shapes = {},
                                               const std::vector<ProfileEntry>& fused = {});
// `p` with a coordinate's option applied to the one-column entries of `arch` (every device's) of that
// family, from the replay's choices (what an earlier token step added is taken out first): "tuned"
// approves the replay's choices (again); "default" rejects them, noting kTokenNote + `why`; "off"
// rejects the groups; "fused" rejects the unfused pairs that have an entry in `fused` and puts that
// entry in instead. The family's pipelined entries follow their plain launch's config.
// With `shapes`, only that model's entries of the family (of_model).
Profile with_token_option(Profile p, const std::string& arch, const std::string& kind, const std::string& option,
                          const std::string& why = "the engine's own config is faster per token",
                          const std::vector<ProfileEntry>& fused = {}, const std::vector<ShapeKey>& shapes = {});
// The producer coordinates for a model whose one-column launches are `shapes`, appended to `coordinates`
// when it has a gate/up (fused or over experts): the norm's (its row length: the gate/up's K, which
// reads the FFN norm; widths: 1 and the other batch widths 2..8 of `ncols`, where it removes the same
// launches), then the GLU's (the gate/up's n; one column, the only width of the unfused pair).
void add_producer_coordinates(std::vector<TokenCoordinate>& coordinates, const std::vector<ShapeKey>& shapes,
                              const std::vector<int>& ncols = {1});
// Whether the GLU coordinate `c` can change anything in `p` for `arch`: an approved one-column unfused
// gate/up pair of n c.norm_k, or (hook v10) a fused gate/up over experts of n c.norm_k among the model's
// one-column launches `shapes` (one kernel writes its GLU and the copy); elsewhere the GLU runs inside
// the fused launch and writes no copy.
bool glu_applies(const Profile& p, const std::string& arch, const TokenCoordinate& c, const std::vector<ShapeKey>& shapes = {});
// The pair-group coordinate for a model whose one-column launches are `shapes`, appended to `coordinates`
// when it has a fused gate/up on plain weights (the group kernel has no experts).
void add_pair_group_coordinate(std::vector<TokenCoordinate>& coordinates, const std::vector<ShapeKey>& shapes);
// The approved one-column unfused pair of plain weights of `arch` and n `n` in `p` (the pair group's
// coordinate keeps the gate/up's n in norm_k), or null.
const ProfileEntry* unfused_pair(const Profile& p, const std::string& arch, int n);
// `p` with the pair-group coordinate's option: "on" puts in, for unfused_pair(p, arch), one approved
// mul_mat_group entry of its two members (noted and with provenance as a producer's entry); "off" takes
// it out; without a pair nothing changes.
Profile with_pair_group_option(Profile p, const std::string& arch, const TokenCoordinate& c, size_t option);
// `p` with the producer coordinate `c`'s option (`c.options[option]`) for `arch`: "on" puts in one
// approved entry of c.kind per width of c.widths (k c.norm_k, the device of the arch's other one-column
// entries), noted kTokenNote + c.why, whose provenance is c's samples once measured (µs per token off →
// on, at one column: an entry at another width says so in its note); "off" takes them out.
Profile with_producer_option(Profile p, const std::string& arch, const TokenCoordinate& c, size_t option);
// Each pipelined one-column entry of `arch` (of family `kind`; empty: every family) at the config its
// plain launch runs: the approved entry's, else the engine's default.
void align_pipelined(Profile& p, const std::string& arch, const std::string& kind = {});
// Picks the option: the fastest other one when its CI lower bound over "tuned" is at least 1 + min_gain.
// The speedup is the median over rounds of each round's ratio (bootstrap_round_ratio): rounds run the
// options side by side, and the machine's level may drift from one round to the next.
void decide_coordinate(TokenCoordinate& c, double min_gain = kDefaultMinTokenGain);

struct TokenPrediction {
  int tokens = 0;                                              // per window (the bench's tg test)
  std::vector<std::vector<double>> stock, profile;             // µs per token per round
  double stock_us = 0, profile_us = 0;                         // medians
  double speedup = 1, low = 1, high = 1;                       // stock / profile, 95 % CI
  int greedy_steps = 0;
  bool greedy_identical = false, finite = false;               // the profile's greedy tokens = stock's; logits finite
  double bench_speedup = 0;                                    // llama-bench's, once measured (0: not yet)
};
void summarize_prediction(TokenPrediction& p);

nlohmann::json to_json(const TokenCoordinate& c);
TokenCoordinate token_coordinate_from_json(const nlohmann::json& j);  // Error(BadInput) when it does not read
nlohmann::json to_json(const TokenPrediction& p);
TokenPrediction token_prediction_from_json(const nlohmann::json& j);
std::string token_text(const std::vector<TokenCoordinate>& coordinates, const TokenPrediction* prediction);

}  // namespace temper::tune
