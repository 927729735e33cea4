// error: 2:21: unknown stablehlo type: foobar
func.func @main(%t: !stablehlo.foobar) -> () {
  return
}
