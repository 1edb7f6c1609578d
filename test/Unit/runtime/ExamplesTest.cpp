//===- ExamplesTest.cpp - packing examples into rows ----------------------===//
//
// packExamples (runtime/src/data/Examples.cpp), the best-fit-decreasing
// packing behind tgc-run --padding=pack: every example in exactly one row,
// no row over its length, examples longer than a row cut to it, and the
// rows best fit decreasing makes where first fit in the given order makes
// more.
//
//===----------------------------------------------------------------------===//

#include "tgc/runtime/Data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace tgc::rt;

namespace {

/// Checks `rows` as packExamples' result for `lengths` and `rowLength`.
void expectPacking(const std::vector<std::vector<int64_t>> &rows,
                   const std::vector<int64_t> &lengths, int64_t rowLength) {
  std::vector<int> seen(lengths.size(), 0);
  for (const std::vector<int64_t> &row : rows) {
    EXPECT_FALSE(row.empty());
    int64_t used = 0;
    for (int64_t e : row) {
      ASSERT_GE(e, 0);
      ASSERT_LT(e, int64_t(lengths.size()));
      ++seen[size_t(e)];
      used += std::min(lengths[size_t(e)], rowLength);
    }
    EXPECT_LE(used, rowLength);
  }
  for (size_t e = 0; e < seen.size(); ++e)
    EXPECT_EQ(seen[e], 1) << "example " << e;
}

TEST(ExamplesTest, PacksBestFitDecreasing) {
  // In this order, first fit fills row 1 with 6 + 2 + 2 and needs three
  // rows for what best fit decreasing puts in two: 6 + 4 and 5 + 3 + 2.
  std::vector<int64_t> lengths = {6, 2, 5, 4, 3};
  std::vector<std::vector<int64_t>> rows = packExamples(lengths, 10);
  expectPacking(rows, lengths, 10);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(rows[1], (std::vector<int64_t>{2, 4, 1}));
}

TEST(ExamplesTest, CutsLongExamplesAndPacksRandomSets) {
  // An example longer than the row fills a row alone (cut to it).
  std::vector<std::vector<int64_t>> rows = packExamples({30, 1, 16}, 16);
  expectPacking(rows, {30, 1, 16}, 16);
  EXPECT_EQ(rows.size(), 3u);
  EXPECT_TRUE(packExamples({}, 8).empty());
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    int64_t rowLength = 8 + int64_t(rng() % 120);
    std::vector<int64_t> lengths(rng() % 300);
    int64_t tokens = 0;
    for (int64_t &n : lengths) {
      n = 1 + int64_t(rng() % uint32_t(rowLength + 10));
      tokens += std::min(n, rowLength);
    }
    rows = packExamples(lengths, rowLength);
    expectPacking(rows, lengths, rowLength);
    // A row is opened only for an example that fits no row already open:
    // any two rows together hold more than one row's length (so at most
    // one is half empty, and there are fewer than 2 tokens / rowLength + 1).
    std::vector<int64_t> fills;
    for (const std::vector<int64_t> &row : rows) {
      int64_t used = 0;
      for (int64_t e : row)
        used += std::min(lengths[size_t(e)], rowLength);
      fills.push_back(used);
    }
    std::sort(fills.begin(), fills.end());
    if (fills.size() >= 2)
      EXPECT_GT(fills[0] + fills[1], rowLength);
    EXPECT_LT(int64_t(rows.size()), 2 * tokens / rowLength + 1 + 1);
  }
}

} // namespace
