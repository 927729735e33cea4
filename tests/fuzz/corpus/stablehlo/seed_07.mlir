
module {
  sdy.mesh @mesh = <["x"=2]>
  func.func private @relu(%a: tensor<4xf32>) -> tensor<4xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<4xf32>
    %r = stablehlo.maximum %a, %z : tensor<4xf32>
    return %r : tensor<4xf32>
  }
  func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%l: tensor<4xf32>) {
      %1 = func.call @relu(%l) : (tensor<4xf32>) -> tensor<4xf32>
      %2 = "mhlo.fusion"(%1, %l) ({
      ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
        %3 = stablehlo.multiply %p, %q : tensor<4xf32>
        "mhlo.return"(%3) : (tensor<4xf32>) -> ()
      }) {fusion_kind = #mhlo<fusion_kind kLoop>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %4 = "stablehlo.all_reduce"(%2) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<4xf32>) -> tensor<4xf32>
      sdy.return %4 : tensor<4xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
