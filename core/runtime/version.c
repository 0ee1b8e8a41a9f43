/* pt_version: the numbers this library was built with (version.h). */
#include "portable/version.h"

const pt_version_info *pt_version(void) {
    static const pt_version_info v = {PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH,
                                      PT_VERSION_NUMBER, PT_VERSION_STRING};
    return &v;
}
