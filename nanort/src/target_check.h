// Whether this machine can run a program's target record: device kind,
// architecture and CPU features.
#ifndef NANORT_SRC_TARGET_CHECK_H_
#define NANORT_SRC_TARGET_CHECK_H_

#include "nanort/nanort.h"
#include "program_generated.h"

namespace nanort {

// NANORT_UNSUPPORTED_TARGET naming the mismatch (GPU program, another
// architecture, or the missing CPU features) unless this CPU runs `target`.
nanort_status_code CheckTargetRunsHere(const fb::Target* target, nanort_status* status);

}  // namespace nanort

#endif  // NANORT_SRC_TARGET_CHECK_H_
