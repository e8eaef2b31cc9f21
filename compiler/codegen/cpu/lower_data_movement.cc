// CPU lowerings of the data movement operators, one lower_<op>.cc each.
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

Lowering makeSliceLowering();            // lower_slice.cc
Lowering makeExpandLowering();           // lower_expand.cc
Lowering makePadLowering();              // lower_pad.cc
Lowering makeGatherLowering();           // lower_gather.cc
Lowering makeGatherElementsLowering();   // lower_gather_elements.cc
Lowering makeGatherNDLowering();         // lower_gather_nd.cc
Lowering makeScatterNDLowering();        // lower_scatter.cc
Lowering makeScatterElementsLowering();  // lower_scatter.cc
Lowering makeTriluLowering();            // lower_trilu.cc
Lowering makeOneHotLowering();           // lower_one_hot.cc
Lowering makeReverseSequenceLowering();  // lower_reverse_sequence.cc

std::vector<std::pair<std::string, Lowering>> dataMovementLowerings() {
  return {{"Slice", makeSliceLowering()},
          {"Expand", makeExpandLowering()},
          {"Pad", makePadLowering()},
          {"Gather", makeGatherLowering()},
          {"GatherElements", makeGatherElementsLowering()},
          {"GatherND", makeGatherNDLowering()},
          {"ScatterND", makeScatterNDLowering()},
          {"ScatterElements", makeScatterElementsLowering()},
          {"Trilu", makeTriluLowering()},
          {"OneHot", makeOneHotLowering()},
          {"ReverseSequence", makeReverseSequenceLowering()}};
}

}  // namespace nanoc::cpu
