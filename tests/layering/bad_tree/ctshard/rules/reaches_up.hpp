#pragma once
// a rule that reaches up into select/: check_layers.cmake must reject this tree
#include "ctshard/select/enumerator.hpp"
