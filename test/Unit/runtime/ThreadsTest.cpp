//===- ThreadsTest.cpp - the same bits at any thread count ----------------===//
//
// The CPU kernels split their loops into chunks fixed by the problem size
// and add partial sums in chunk order, so their results must not depend on
// how many threads run them. Each kernel here runs on problems large
// enough to take many chunks, at 1 and at 2 threads, and the results are
// compared byte for byte. Also: the thread count's bounds.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/CpuKernels.h"
#include "tgc/runtime/Session.h"
#include "tgc/runtime/Threads.h"

#include "TestUtil.h"
#include "cpu/Common.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <functional>

using namespace tgc::rt;
using namespace tgc::rt::test;
namespace cpu = tgc::rt::cpu;

namespace {

/// Runs `kernel` (which writes its results into fresh tensors it returns)
/// at 1 and at 2 threads and expects the same bytes.
void expectThreadIndependent(
    const char *name,
    const std::function<std::vector<HostTensor>()> &kernel) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(setCpuThreads(1).ok());
  std::vector<HostTensor> one = kernel();
  ASSERT_TRUE(setCpuThreads(2).ok());
  std::vector<HostTensor> two = kernel();
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i)
    EXPECT_EQ(std::memcmp(one[i].ref().data, two[i].ref().data,
                          size_t(one[i].ref().numBytes())),
              0)
        << "result " << i;
}

class ThreadsTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (availableCores() < 2)
      GTEST_SKIP() << "needs 2 cores";
  }
  void TearDown() override { (void)setCpuThreads(availableCores()); }
  std::mt19937 rng{7};
};

TEST_F(ThreadsTest, RowKernelsAndTheirSums) {
  HostTensor x = randomTensor(rng, DType::F32, {512, 384});
  HostTensor w = randomTensor(rng, DType::F32, {384});
  HostTensor b = randomTensor(rng, DType::F32, {384});
  HostTensor g = randomTensor(rng, DType::F32, {512, 384});
  expectThreadIndependent("layer_norm and its gradient", [&] {
    HostTensor y(DType::F32, {512, 384}), dx(DType::F32, {512, 384}),
        dw(DType::F32, {384}), db(DType::F32, {384});
    EXPECT_TRUE(cpu::layerNorm(cpuCtx, x, w, b, 1e-5, y).ok());
    EXPECT_TRUE(cpu::layerNormGrad(cpuCtx, x, w, g, 1e-5, dx, dw, db).ok());
    return std::vector<HostTensor>{y, dx, dw, db};
  });
  expectThreadIndependent("softmax and its gradient", [&] {
    HostTensor y(DType::F32, {512, 384}), dx(DType::F32, {512, 384});
    EXPECT_TRUE(cpu::softmax(cpuCtx, x, -1, y).ok());
    EXPECT_TRUE(cpu::softmaxGrad(cpuCtx, y, g, -1, dx).ok());
    return std::vector<HostTensor>{y, dx};
  });
  expectThreadIndependent("reductions", [&] {
    HostTensor rows(DType::F32, {384}), cols(DType::F32, {512}),
        all(DType::F32, {}), bias(DType::F32, {384});
    EXPECT_TRUE(cpu::reduceSum(cpuCtx, x, {0}, false, rows).ok());
    EXPECT_TRUE(cpu::reduceSum(cpuCtx, x, {1}, false, cols).ok());
    EXPECT_TRUE(cpu::reduceSum(cpuCtx, x, {0, 1}, false, all).ok());
    EXPECT_TRUE(cpu::sumTo(cpuCtx, x, bias).ok());
    return std::vector<HostTensor>{rows, cols, all, bias};
  });
  expectThreadIndependent("global_norm", [&] {
    HostTensor norm(DType::F32, {});
    EXPECT_TRUE(cpu::globalNorm(cpuCtx, {x.ref(), g.ref(), w.ref()}, norm).ok());
    return std::vector<HostTensor>{norm};
  });
}

TEST_F(ThreadsTest, LossAttentionEmbeddingAndUpdate) {
  HostTensor logits = randomTensor(rng, DType::F32, {256, 1000}, -4, 4);
  std::vector<double> labels(256);
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = double((i * 37) % 1000);
  labels[5] = -100; // ignored
  HostTensor targets = HostTensor::of(DType::I64, {256}, labels);
  HostTensor one = HostTensor::of(DType::F32, {}, {1.0});
  expectThreadIndependent("cross_entropy and its gradient", [&] {
    HostTensor loss(DType::F32, {}), grad(DType::F32, {256, 1000});
    EXPECT_TRUE(cpu::crossEntropy(cpuCtx, logits, targets, -100, loss).ok());
    EXPECT_TRUE(
        cpu::crossEntropyGrad(cpuCtx, logits, targets, one, -100, grad).ok());
    return std::vector<HostTensor>{loss, grad};
  });

  Shape qkv = {2, 4, 64, 32};
  HostTensor q = randomTensor(rng, DType::F32, qkv);
  HostTensor k = randomTensor(rng, DType::F32, qkv);
  HostTensor v = randomTensor(rng, DType::F32, qkv);
  HostTensor dO = randomTensor(rng, DType::F32, qkv);
  expectThreadIndependent("attention and its gradient", [&] {
    HostTensor o(DType::F32, qkv), dq(DType::F32, qkv), dk(DType::F32, qkv),
        dv(DType::F32, qkv);
    EXPECT_TRUE(cpu::attention(cpuCtx, q, k, v, nullptr, true, std::nullopt, o).ok());
    EXPECT_TRUE(cpu::attentionGrad(cpuCtx, q, k, v, o, dO, nullptr, true,
                                   std::nullopt, dq, dk, dv)
                    .ok());
    return std::vector<HostTensor>{o, dq, dk, dv};
  });

  std::vector<double> ids(2048);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = double((i * 7) % 50);
  HostTensor indices = HostTensor::of(DType::I64, {2048}, ids);
  HostTensor rows = randomTensor(rng, DType::F32, {2048, 96});
  expectThreadIndependent("embedding_grad", [&] {
    HostTensor table(DType::F32, {50, 96});
    EXPECT_TRUE(
        cpu::embeddingGrad(cpuCtx, indices, rows, nullptr, -1, table).ok());
    return std::vector<HostTensor>{table};
  });

  HostTensor p = randomTensor(rng, DType::F32, {100000});
  HostTensor dp = randomTensor(rng, DType::F32, {100000});
  HostTensor m = randomTensor(rng, DType::F32, {100000});
  HostTensor s = randomTensor(rng, DType::F32, {100000}, 0, 1);
  HostTensor lr = HostTensor::of(DType::F32, {}, {1e-3});
  HostTensor step = HostTensor::of(DType::I64, {}, {3});
  expectThreadIndependent("adamw_update and gelu", [&] {
    HostTensor np(DType::F32, {100000}), nm(DType::F32, {100000}),
        ns(DType::F32, {100000}), act(DType::F32, {100000}),
        dact(DType::F32, {100000});
    EXPECT_TRUE(cpu::adamwUpdate(cpuCtx, p, dp, m, s, lr, step, 0.9, 0.999, 1e-8,
                                 0.01, np, nm, ns)
                    .ok());
    EXPECT_TRUE(cpu::gelu(cpuCtx, p, act).ok());
    EXPECT_TRUE(cpu::geluGrad(cpuCtx, p, dp, dact).ok());
    return std::vector<HostTensor>{np, nm, ns, act, dact};
  });
}

TEST_F(ThreadsTest, MatrixProducts) {
  // Large enough for many GEMM tiles (and, with OpenBLAS's own threading,
  // for a split that rounds differently on its Haswell and Zen kernels):
  // a weight-shared product, a weight gradient with a long contraction
  // (the batch's rows), batched products with transposes, and tg.linear.
  HostTensor x = randomTensor(rng, DType::F32, {8, 128, 512});
  HostTensor w = randomTensor(rng, DType::F32, {512, 1024});
  HostTensor g = randomTensor(rng, DType::F32, {8, 128, 1024});
  HostTensor bias = randomTensor(rng, DType::F32, {1024});
  HostTensor xs = randomTensor(rng, DType::F32, {1024, 512});
  HostTensor gs = randomTensor(rng, DType::F32, {1024, 1024});
  ASSERT_GE(cpu::gemmTiling(1024, 1024, 512).count(), 4);
  expectThreadIndependent("matmul", [&] {
    HostTensor y(DType::F32, {8, 128, 1024}), dw(DType::F32, {512, 1024}),
        dx(DType::F32, {8, 128, 512}), scores(DType::F32, {8, 128, 128});
    EXPECT_TRUE(cpu::matmul(cpuCtx, x, w, false, false, y).ok());
    EXPECT_TRUE(cpu::matmul(cpuCtx, xs, gs, true, false, dw).ok());
    EXPECT_TRUE(cpu::matmul(cpuCtx, g, w, false, true, dx).ok());
    EXPECT_TRUE(cpu::matmul(cpuCtx, x, x, false, true, scores).ok());
    return std::vector<HostTensor>{y, dw, dx, scores};
  });
  expectThreadIndependent("linear", [&] {
    HostTensor y(DType::F32, {8, 128, 1024}), pre(DType::F32, {8, 128, 1024});
    EXPECT_TRUE(cpu::linear(cpuCtx, x, w, bias, true, y, &pre.ref()).ok());
    return std::vector<HostTensor>{y, pre};
  });
}

TEST_F(ThreadsTest, InitializationIsCounterBased) {
  // Element i of a tensor depends on the seed, the name and i alone: the
  // same at any thread count, and the same in a tensor of any size.
  TensorInfo info;
  info.name = "h.0.mlp.c_fc.weight";
  info.init = InitKind::Normal;
  info.initA = 0.0;
  info.initB = 0.02;
  for (InitKind kind : {InitKind::Normal, InitKind::Uniform}) {
    info.init = kind;
    expectThreadIndependent("initializeTensor", [&] {
      HostTensor big(DType::F32, {300000});
      initializeTensor(info, 1234, big);
      return std::vector<HostTensor>{big};
    });
    HostTensor big(DType::F32, {300000}), small(DType::F32, {10});
    initializeTensor(info, 1234, big);
    initializeTensor(info, 1234, small);
    EXPECT_EQ(std::memcmp(big.ref().data, small.ref().data, 40), 0);
    HostTensor other(DType::F32, {10});
    initializeTensor(info, 1235, other);
    EXPECT_NE(std::memcmp(other.ref().data, small.ref().data, 40), 0);
  }
}

TEST_F(ThreadsTest, LoadingOpenBlasKeepsTheTeamSize) {
  // OpenBLAS's OpenMP build sets OpenMP's thread count when it is told to
  // run single-threaded: the kernels' team must keep the count set here,
  // or every kernel quietly runs on one thread.
  ASSERT_TRUE(setCpuThreads(2).ok());
  ASSERT_TRUE(loadBlas().ok());
#ifdef _OPENMP
  int team = 0;
#pragma omp parallel
  {
#pragma omp single
    team = omp_get_num_threads();
  }
  EXPECT_EQ(team, 2);
#endif
}

TEST(ThreadCountTest, Bounds) {
  Status zero = setCpuThreads(0);
  EXPECT_FALSE(zero.ok());
  EXPECT_NE(zero.error.find("between 1 and"), std::string::npos);
  EXPECT_FALSE(setCpuThreads(availableCores() + 1).ok());
  EXPECT_TRUE(setCpuThreads(1).ok());
  EXPECT_EQ(cpuThreads(), 1);
  EXPECT_TRUE(setCpuThreads(availableCores()).ok());
}

} // namespace
