#loc1 = loc("mlp")
#loc2 = loc("layers.0")
module {
  func.func @mlp(%arg0: tensor<2x4xf32> {tg.input = "inputs"} loc("mlp"), %arg1: tensor<2xi64> {tg.input = "targets"} loc("mlp"), %arg2: tensor<3x4xf32> {tg.init = #tg.init<uniform(-5.000000e-01, 5.000000e-01)>, tg.param = "layers.0.weight"} loc("layers.0"), %arg3: tensor<3xf32> {tg.init = #tg.init<uniform(-5.000000e-01, 5.000000e-01)>, tg.param = "layers.0.bias"} loc("layers.0")) -> tensor<f32> attributes {tg.model} {
    %0 = tg.matmul %arg0, %arg2 {transpose_rhs = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32> loc(#loc2)
    %1 = tg.add %0, %arg3 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc(#loc2)
    %2 = tg.cross_entropy %1, %arg1 : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32> loc(#loc3)
    return %2 : tensor<f32> loc(#loc3)
  } loc(#loc1)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("loss")

