
func.func private @next(%a: tensor<i64>) -> tensor<i64> {
  %one = stablehlo.constant dense<1> : tensor<i64>
  %r = stablehlo.add %a, %one : tensor<i64>
  return %r : tensor<i64>
}
func.func private @cond(%a: tensor<i64>, %b: tensor<i64>) -> tensor<i1> {
  %p = stablehlo.compare  LT, %a, %b : (tensor<i64>, tensor<i64>) -> tensor<i1>
  return %p : tensor<i1>
}
func.func @main() -> tensor<i64> {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %n = stablehlo.constant dense<12> : tensor<i64>
  %0:2 = stablehlo.while(%i = %zero, %limit = %n) : tensor<i64>, tensor<i64>
   cond {
    %p = func.call @cond(%i, %limit) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %k = func.call @next(%i) : (tensor<i64>) -> tensor<i64>
    stablehlo.return %k, %limit : tensor<i64>, tensor<i64>
  }
  return %0#0 : tensor<i64>
}
