/*
 * own_image.h -- the checked image handed to a structure that maps its pool
 * file itself, without a copy (own_image.c says how)
 */
#ifndef CC_OWN_IMAGE_H
#define CC_OWN_IMAGE_H

#include <stddef.h>

/* cc_own_image_copy -- CRASHCHECK_OWN_POOL_COPY asks for the old way: a file per state */
int cc_own_image_copy(void);

/*
 * cc_own_image_begin -- make an empty file of SIZE bytes, its name in PATH, whose mappings are
 * the image at POOL until the check ends; non-zero (ERR says why) when it cannot be made.  The
 * caller opens PATH with the structure and then unlinks it.
 */
int cc_own_image_begin(void *pool, size_t size, char *path, size_t pathlen, char *err, size_t errlen);

/* cc_own_image_active -- the image is being handed over so (for the end of the check) */
int cc_own_image_active(void);

#endif
