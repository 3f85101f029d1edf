// The cuda launch switch (backends/cuda/launch_mode.cuh): every mode (PDL,
// cudaLaunchKernelEx without attributes, <<<>>>, PDL only while capturing)
// gives the same results for a chain of small elementwise kernels and the
// gemv, each reading what the one before wrote, eagerly and replayed from a
// graph; and the runtime's "this thread captures" flag is set exactly while
// a Graph::capture body runs, also after a body that throws.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "catch.hpp"
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "strata/matmul.hpp"

namespace strata::cuda {  // hooks of backends/cuda (cuda_runtime.cu)
enum class LaunchMode : int;
LaunchMode launch_mode();
void set_launch_mode(LaunchMode m);
bool thread_capturing() noexcept;
}  // namespace strata::cuda

using namespace strata;

namespace {

const Device kGpu = Device::cuda(0);

// Restores the process's launch mode when a test section ends.
struct ModeScope {
  cuda::LaunchMode before = cuda::launch_mode();
  explicit ModeScope(int m) { cuda::set_launch_mode(static_cast<cuda::LaunchMode>(m)); }
  ~ModeScope() { cuda::set_launch_mode(before); }
};

// y = (x + d) * s, then out = y W^T (the gemv: 1 row, W [N, K]).
void step(const Tensor& x, const Tensor& d, const Tensor& s, const Tensor& y, const Tensor& w,
          const Tensor& out, const OpOptions& eo, const MatmulOptions& mo) {
  add_out(y, x, d, eo);
  mul_out(y, y, s, eo);
  linear_out(out, y, w, Tensor(), mo);
}

// The same on the host in f64.
std::vector<double> want(const Tensor& x, const Tensor& d, const Tensor& s, const Tensor& w) {
  const auto xv = x.to_vector<double>(), dv = d.to_vector<double>(), sv = s.to_vector<double>();
  const auto wv = w.to_vector<double>();
  const std::size_t K = xv.size(), N = wv.size() / K;
  std::vector<double> r(N, 0.0);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t k = 0; k < K; ++k) r[n] += (xv[k] + dv[k]) * sv[k] * wv[n * K + k];
  return r;
}

void require_near(const Tensor& got, const std::vector<double>& w) {
  const auto g = got.to_vector<double>();
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(g[i] - w[i]) <= 1e-3 * (1.0 + std::abs(w[i])));
  }
}

}  // namespace

TEST_CASE("cuda launch modes: same results eager and replayed", "[cuda][launch_mode][graph]") {
  const std::int64_t K = 512, N = 768;
  const Tensor x = Tensor::randn({1, K}, 301).to(kGpu), w = Tensor::randn({N, K}, 302).to(kGpu);
  for (int mode = 0; mode < 4; ++mode) {
    INFO("launch mode " << mode);
    ModeScope scope(mode);
    // Eager: three dependent kernels, twice with new inputs.
    const Tensor y = Tensor::empty({1, K}, DType::f32, kGpu);
    const Tensor out = Tensor::full({1, N}, 1e30, DType::f32, kGpu);
    for (std::uint64_t it = 0; it < 2; ++it) {
      const Tensor d = Tensor::randn({1, K}, 310 + it).to(kGpu);
      const Tensor s = Tensor::randn({1, K}, 320 + it).to(kGpu);
      step(x, d, s, y, w, out, {}, {});
      require_near(out, want(x, d, s, w));
    }
    // A graph of the same steps, replayed after new values are written into
    // its inputs.
    Stream st(kGpu);
    OpOptions eo;
    eo.stream = st.handle();
    MatmulOptions mo;
    mo.stream = st.handle();
    const Tensor d = Tensor::zeros({1, K}, DType::f32, kGpu);
    const Tensor s = Tensor::zeros({1, K}, DType::f32, kGpu);
    step(x, d, s, y, w, out, eo, mo);  // first use on this stream: eager
    st.synchronize();
    Graph g = Graph::capture(st, [&] { step(x, d, s, y, w, out, eo, mo); });
    for (std::uint64_t it = 0; it < 2; ++it) {
      const Tensor hd = Tensor::randn({1, K}, 330 + it), hs = Tensor::randn({1, K}, 340 + it);
      d.copy_from(hd);
      s.copy_from(hs);
      g.replay(st);
      st.synchronize();
      require_near(out, want(x, hd, hs, w));
    }
  }
}

TEST_CASE("cuda launch modes: the capturing flag follows Graph::capture",
          "[cuda][launch_mode][graph]") {
  Stream st(kGpu);
  CHECK_FALSE(cuda::thread_capturing());
  bool inside = false;
  {
    Graph g = Graph::capture(st, [&] { inside = cuda::thread_capturing(); });
  }
  CHECK(inside);
  CHECK_FALSE(cuda::thread_capturing());
  // A body that throws: the capture is aborted and the flag cleared.
  CHECK_THROWS(Graph::capture(st, [] { throw std::runtime_error("body failed"); }));
  CHECK_FALSE(cuda::thread_capturing());
}
