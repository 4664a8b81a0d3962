/* crashcheck-corpus
 * construct: plain stores of 1, 2, 4 and 8 bytes
 * => store/plain off=0x0 size=1 data=2a line=@s1
 * => store/plain off=0x2 size=2 data=3412 line=@s2
 * => store/plain off=0x4 size=4 data=78563412 line=@s4
 * => store/plain off=0x8 size=8 data=efcdab8967452301 line=@s8
 * => store/plain off=0x43 size=1 data=ff line=@odd
 */
#include "corpus.h"

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	*(uint8_t *)pm = 0x2a;                          /* @s1 */
	BARRIER();
	*(uint16_t *)(pm + 2) = 0x1234;                 /* @s2 */
	BARRIER();
	*(uint32_t *)(pm + 4) = 0x12345678;             /* @s4 */
	BARRIER();
	*(uint64_t *)(pm + 8) = 0x0123456789abcdefULL;  /* @s8 */
	BARRIER();
	pm[0x43] = (char)0xff;                          /* @odd */
	return 0;
}
