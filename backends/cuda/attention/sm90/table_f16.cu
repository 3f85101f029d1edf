// f16 configurations of the wgmma attention kernel (sm90/configs_16bit.cuh has
// the list); bf16 and f16 compile in files of their own, in parallel.
#include "cuda/attention/sm90/configs_16bit.cuh"

namespace strata::cuda {

template const WgmmaTables& wgmma_tables<__half>();

}  // namespace strata::cuda
