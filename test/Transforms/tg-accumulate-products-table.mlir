// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-accumulate-products -o - | FileCheck %s
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer --tg-accumulate-products=print=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: tgc-opt %s --tg-amp --tg-autodiff --tg-optimizer --tg-accumulate-products -o - | FileCheck %s --check-prefix=AMP

// A tied embedding: the table is looked up and, transposed, is the
// classifier. Its gradient is the classifier's weight gradient plus the
// lookup's scatter-add; the scatter starts from the first (its addend), so
// no tg.add reads and writes the table-sized sum again.
func.func @tied(%ids: tensor<2x4xi64> {tg.input = "ids"},
                %y: tensor<8xi64> {tg.input = "targets"},
                %wte: tensor<10x6xf32> {tg.param = "wte"})
    -> tensor<f32> attributes {tg.model} {
  %h = tg.embedding %wte, %ids : (tensor<10x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
  %h2 = tg.reshape %h : tensor<2x4x6xf32> -> tensor<8x6xf32>
  %logits = tg.matmul %h2, %wte {transpose_rhs = true}
      : (tensor<8x6xf32>, tensor<10x6xf32>) -> tensor<8x10xf32>
  %loss = tg.cross_entropy %logits, %y : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @tied_train_step
// CHECK: %[[DW:.*]] = tg.matmul {{.*}} {transpose_lhs = true} : (tensor<8x10xf32>, tensor<8x6xf32>) -> tensor<10x6xf32>
// CHECK: %[[TABLE:.*]] = tg.embedding_grad %arg0, %{{.*}} addend %[[DW]] : (tensor<2x4xi64>, tensor<2x4x6xf32>, tensor<10x6xf32>) -> tensor<10x6xf32>
// CHECK-NOT: tg.add {{.*}} -> tensor<10x6xf32>
// CHECK: tg.adamw_update %{{.*}}, %[[TABLE]]

// SUMMARY: tg-accumulate-products: 0 products added onto their accumulators by the GEMM (0 B of products no longer stored), 1 onto a table's gradient by its scatter

// Under mixed precision the classifier's gradient is bf16, widened to f32
// for the sum: the scatter reads the bf16 value and widens it itself (the
// same values), and the cast is gone.
// AMP-LABEL: func.func @tied_train_step
// AMP: %[[DW:.*]] = tg.matmul {{.*}} {transpose_lhs = true} : (tensor<8x10xbf16>, tensor<8x6xbf16>) -> tensor<10x6xbf16>
// AMP-NOT: tg.cast %[[DW]]
// AMP: tg.embedding_grad %arg0, %{{.*}} addend %[[DW]] : (tensor<2x4xi64>, tensor<2x4x6xf32>, tensor<10x6xbf16>) -> tensor<10x6xf32>
// AMP-NOT: tg.add {{.*}} -> tensor<10x6xf32>
