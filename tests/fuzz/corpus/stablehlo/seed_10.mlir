
!pair = tuple<tensor<2xf32>, tensor<i32>>
#map = affine_map<(d0) -> (d0)>
module {
  func.func @main(%a: tensor<?x4xf32, #stablehlo.bounds<8, ?>> loc(#loc2), %b: !pair, %q: tensor<3x!quant.uniform<i8:f32, 2.0:15>>, %f: !stablehlo.future<tensor<2xf32>>) -> tensor<2xf8E4M3FN> {
    %0 = stablehlo.constant dense_resource<blob1> : tensor<2xf8E4M3FN> loc(#loc3)
    %1 = stablehlo.get_tuple_element %b[0] : (!pair) -> tensor<2xf32>
    %2 = stablehlo.constant dense<"0x0000803F00000040"> : tensor<2xf32>
    %3 = stablehlo.constant dense<(1.0, 2.0)> : tensor<complex<f32>>
    return %0 : tensor<2xf8E4M3FN>
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("x.py":1:2 to :5)
#loc3 = loc(callsite("f" at fused["a.py":3:4, "b.py":5:6]))
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000102"
    }
  }
#-}
