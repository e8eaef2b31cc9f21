/* The held-out digits that samples/digits/train.py wrote (DIGITS_DATA_DIR:
 * test_x.f32, float32 [N, 64] images; test_y.u8, their labels; ort_mlp.u8,
 * ONNX Runtime's classes for them), linked into read-only memory as they are:
 * the assembler finds the files through the include path CMakeLists.txt sets.
 * Your firmware reads its inputs from a sensor instead. */
  .section .rodata.digits_data, "a"
  .balign 4
  .global digits_x
  .global digits_x_end
digits_x:
  .incbin "test_x.f32"
digits_x_end:
  .global digits_y
  .global digits_y_end
digits_y:
  .incbin "test_y.u8"
digits_y_end:
  .global digits_ort
  .global digits_ort_end
digits_ort:
  .incbin "ort_mlp.u8"
digits_ort_end:
