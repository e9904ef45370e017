/*
 * image.h — a local container image as a chroot rootfs (image.c).
 */
#ifndef SANDLOCK_IMAGE_H
#define SANDLOCK_IMAGE_H

#include "util.h"

struct sl_image {
	char *rootfs;   /* the extracted tree in the cache */
	char *workdir;  /* the image's WorkingDir, or NULL */
	sl_strvec argv; /* Entrypoint + Cmd (may be empty) */
	sl_strvec env;  /* "K=V" of the image's Env */
};

/* Resolve ref in the local Podman (or Docker) store, extracting its
 * filesystem once into the cache keyed by the image id.  Never pulls.
 * 0, or -1 with *msg (heap). */
int sl_image_resolve(const char *ref, struct sl_image *img, char **msg);
void sl_image_free(struct sl_image *img);

#endif /* SANDLOCK_IMAGE_H */
