// A kernel directory (CLG_KERNEL_DIR) with defects that Oclgrind must report, for the
// oclgrind wrapper's own test (oclgrind_catches_defects): see axpy.cl.
