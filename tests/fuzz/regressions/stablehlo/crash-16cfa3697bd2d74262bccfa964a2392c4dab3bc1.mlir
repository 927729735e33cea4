
!pair = tuple<tensor<2xf32>, tensor<i32>>
#map = affine_map<(d0) -> (d0)>
module {
  func.func @main(%a: tensor<?x4xf32, #stablehlo.bounds<8, ?>> loc(#loc2), %b: !pair, %q: tensor<3x!quant.uniform8i8:f32, 2.0:15>>, %f: !stablehlo.future<vensor<2xf32>>) -> tensor<2xf8E4M3FN> {
    %0 = stablehlo.conxf32>
    %3 = stablehlo.constant dense<(1.0, 2.0)> : tensor<complex<f32>>
    return %0 : tensor<2xf8E4M3FN>
  } loc(#loc)
} l// --oc(#loc)
#loc = loc(unknown)
#loc2 = loc("x.py":1:2 to :5)
#loc3 = loc(callsite("f" at fused["aAAAAAAAAAAAAAaAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.py":3:4, "b.py":5:6]))
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000102"
    }
  }
#-}
