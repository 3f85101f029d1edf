// Loads a byte-level model (config.json + model.safetensors, Hugging Face
// names), generates a continuation of a prompt token by token, and checks
// the KV cache against a plain forward: the last token's logits from the
// cache equal those of one forward over the whole text.
//   tiny_lm [model_dir] [prompt] [max_tokens] [cpu|cuda] [f32|bf16]
#include <cmath>
#include <cstdio>
#include <strata/nn/nn.hpp>
#include <strata/strata.hpp>
#include <string>

int main(int argc, char** argv) {
  using namespace strata;
  const std::string dir = argc > 1 ? argv[1] : "models/tiny-llama";
  const std::string prompt = argc > 2 ? argv[2] : "This program is free software";
  const int max_tokens = argc > 3 ? std::stoi(argv[3]) : 80;
  const Device dev = Device::parse(argc > 4 ? argv[4] : "cpu");
  const DType dt = parse_dtype(argc > 5 ? argv[5] : "f32");

  try {
    // The checkpoint's tensors are converted to `dt` and moved to `dev`.
    nn::DecoderLM model = nn::load_model(dir + "/config.json", dir + "/model.safetensors", dt, dev);
    std::printf("%s: %lld parameters, %s on %s\n", dir.c_str(),
                static_cast<long long>(model.num_parameters()), dtype_name(dt).data(),
                dev.str().c_str());

    // Greedy by default; a temperature and a seed make it sample.
    nn::SamplingOptions sampling;
    sampling.temperature = 0.0;
    const std::vector<std::int64_t> ids = nn::ByteTokenizer::encode(prompt);
    std::printf("%s", prompt.c_str());
    const nn::GenerationResult r =
        nn::generate(model, ids, max_tokens, sampling, [](std::int64_t token) {
          std::fputs(nn::ByteTokenizer::decode(token).c_str(), stdout);
          std::fflush(stdout);  // the text appears as it is produced
          return true;
        });
    std::printf("\n\nprefill %.0f tokens/s, decode %.0f tokens/s\n", r.prefill_tokens_per_second(),
                r.decode_tokens_per_second());

    // The same model without a cache: one forward over prompt + generated
    // text but the last token predicts the last token.
    std::vector<std::int64_t> all = ids;
    all.insert(all.end(), r.tokens.begin(), r.tokens.end() - 1);
    const Tensor logits =
        model.forward(Tensor::from_vector(all, {1, static_cast<std::int64_t>(all.size())}));
    const std::vector<float> last =
        logits.select(1, logits.size(1) - 1).reshape({-1}).to_vector<float>();
    const bool same = nn::Sampler().sample(last) == r.tokens.back();
    std::printf("full forward agrees with the cached decode: %s\n", same ? "yes" : "NO");
    return same ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
