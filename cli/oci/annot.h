/*
 * annot.h — annotations "sandlock.*" in config.json set sandlock options
 * the OCI spec has no field for (docs/oci.md lists them).  An unknown
 * sandlock.* key, or a bad value, is an error naming it; other
 * annotations are the engine's and are ignored.
 */
#ifndef SANDLOCK_OCI_ANNOT_H
#define SANDLOCK_OCI_ANNOT_H

#include <jansson.h>

#include "sandlock.h"

/* 0, or -1 after naming the annotation. */
int oci_annot_apply(sandlock_builder_t *b, json_t *annotations);

#endif
