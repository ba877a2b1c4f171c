/* The wire decoder: any bytes; a frame that decodes encodes back to the
 * same bytes and decodes to the same message. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "common/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[PM_WIRE_FRAME_MAX];
	struct pm_msg m, m2;
	const char *err = NULL;
	int n = pm_msg_decode(data, size, &m, &err);

	if (n <= 0)
		return 0;
	assert((size_t)n <= size);
	int e = pm_msg_encode(&m, buf, sizeof(buf));
	assert(e == n && !memcmp(buf, data, (size_t)n));
	assert(pm_msg_decode(buf, (size_t)e, &m2, &err) == e);
	assert(m2.type == m.type && m2.gen == m.gen && m2.rank == m.rank && m2.node == m.node &&
	       m2.status == m.status && m2.count == m.count && m2.text_len == m.text_len &&
	       !memcmp(m2.text, m.text, m.text_len));
	return 0;
}
