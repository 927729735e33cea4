// RUN: some-tool %s
func.func @a() -> () {
  return
}

// -----

module @b {
  func.func @main() -> () { return }
}
module @c {
  func.func @main() -> () { return }
}
