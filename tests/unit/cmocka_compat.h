/* What differs between the cmocka releases the unit tests build with (1.1
 * on Debian 12 and 13, 2.0 on Debian forky), in one place: include it after
 * <cmocka.h>. */
#ifndef PM_CMOCKA_COMPAT_H
#define PM_CMOCKA_COMPAT_H

/* cmocka 2.0 deprecates assert_in_range (an error under -Werror) for
 * assert_int_in_range, which 1.1 does not have. */
#ifndef assert_int_in_range
#define assert_int_in_range(value, minimum, maximum) assert_in_range(value, minimum, maximum)
#endif

#endif
