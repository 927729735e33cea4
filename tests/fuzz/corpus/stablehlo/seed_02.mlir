
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %c0 = stablehlo.constant dense<0> : tensor<i64>
  %0:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i64>, tensor<f32>
   cond {
    %c = stablehlo.constant dense<8> : tensor<i64>
    %p = stablehlo.compare  LT, %i, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i64>
    %n = stablehlo.add %i, %one : tensor<i64>
    %y = stablehlo.multiply %acc, %x : tensor<f32>
    stablehlo.return %n, %y : tensor<i64>, tensor<f32>
  } loc(#loc1)
  return %0#1 : tensor<f32>
}
#loc1 = loc("while")
