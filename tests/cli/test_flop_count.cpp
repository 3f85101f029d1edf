// The CLI's FLOP count rests on kept_pairs (the number of (query, key) pairs
// the masks keep). Checked against the op itself: with q = k = 0 every
// kept score is 0, so exp(lse) of a row is its number of kept keys.
#include <cmath>
#include <optional>
#include <utility>

#include "attention_cli.hpp"
#include "catch.hpp"
#include "strata/attention.hpp"

using namespace strata;

TEST_CASE("cli: kept_pairs matches the op's masks for every alignment", "[cli]") {
  using Window = std::optional<std::pair<std::int64_t, std::int64_t>>;
  for (std::int64_t M : {1, 5, 9}) {
    for (std::int64_t N : {1, 4, 9, 13}) {
      for (Causal causal : {Causal::none, Causal::bottom_right, Causal::top_left}) {
        for (Window w : {Window{}, Window{{2, 0}}, Window{{-1, 1}}, Window{{1, 3}}}) {
          for (bool window_top_left : {false, true}) {
            AttentionOptions opt;
            opt.causal = causal;
            opt.window = w;
            opt.window_top_left = window_top_left;
            opt.backend = "reference";
            const Tensor q = Tensor::zeros({M, 1}, DType::f64);
            const Tensor kv = Tensor::zeros({N, 1}, DType::f64);
            const Tensor lse = softmax_attention_lse(q, kv, kv, opt).lse;
            std::int64_t want = 0;
            for (double l : lse.to_vector<double>())
              want += std::isinf(l) ? 0 : std::llround(std::exp(l));
            INFO("M " << M << " N " << N << " causal " << static_cast<int>(causal)
                      << " window_top_left " << window_top_left);
            CHECK(cli::kept_pairs(M, N, opt) == want);
          }
        }
      }
    }
  }
}
