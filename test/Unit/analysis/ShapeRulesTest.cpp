//===- ShapeRulesTest.cpp - the shape rules compiler and runtime share ----===//
//
// tgc/Support/ShapeRules.h against NumPy's broadcasting and matmul rules
// (numpy.broadcast_shapes, numpy.matmul on stacks of matrices), written
// out by hand, and the messages the dialect and the loader report.
//
//===----------------------------------------------------------------------===//

#include "tgc/Support/ShapeRules.h"

#include <gtest/gtest.h>

using namespace tgc::shapes;

TEST(ShapeRules, BroadcastAlignsTrailingDimensions) {
  EXPECT_EQ(broadcast(Shape{4, 8}, Shape{8}), (Shape{4, 8}));
  EXPECT_EQ(broadcast(Shape{2, 1, 8}, Shape{3, 1}), (Shape{2, 3, 8}));
  EXPECT_EQ(broadcast(Shape{}, Shape{5, 6}), (Shape{5, 6}));
  EXPECT_EQ(broadcast(Shape{1}, Shape{0}), (Shape{0}));
  EXPECT_FALSE(broadcast(Shape{4, 8}, Shape{4}).has_value());
  EXPECT_FALSE(broadcast(Shape{2, 3}, Shape{3, 2}).has_value());
  EXPECT_TRUE(broadcastsTo(Shape{1, 8}, Shape{4, 8}));
  EXPECT_TRUE(broadcastsTo(Shape{8}, Shape{4, 8}));
  // broadcast({4, 8}, {1, 8}) is {4, 8}, not the target {1, 8}.
  EXPECT_FALSE(broadcastsTo(Shape{4, 8}, Shape{1, 8}));
}

TEST(ShapeRules, MatmulTransposesAndBroadcastsBatches) {
  EXPECT_EQ(matmul(Shape{4, 8}, Shape{8, 16}, false, false).shape,
            (Shape{4, 16}));
  EXPECT_EQ(matmul(Shape{8, 4}, Shape{16, 8}, true, true).shape,
            (Shape{4, 16}));
  EXPECT_EQ(matmul(Shape{2, 1, 4, 8}, Shape{3, 8, 5}, false, false).shape,
            (Shape{2, 3, 4, 5}));
  EXPECT_EQ(matmul(Shape{7, 4, 8}, Shape{8, 5}, false, false).shape,
            (Shape{7, 4, 5}));
}

TEST(ShapeRules, MatmulSaysWhatDisagrees) {
  EXPECT_EQ(matmul(Shape{8}, Shape{8, 16}, false, false).error,
            "operands must have rank >= 2, found ranks 1 and 2");
  EXPECT_EQ(matmul(Shape{4, 8}, Shape{4, 16}, false, false).error,
            "contraction dimensions differ: 8 (lhs) and 4 (rhs)");
  EXPECT_EQ(matmul(Shape{2, 4, 8}, Shape{3, 8, 5}, false, false).error,
            "batch dimensions [2] and [3] are not broadcast-compatible");
  EXPECT_TRUE(matmul(Shape{4, 8}, Shape{8, 16}, false, false).ok());
}
