#pragma once
// The fake backend's declarations live with the public headers.
#include "temper/fake_backend.h"
