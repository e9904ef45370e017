/*
 * test_profile.c — sandlock_profile_load, the one reader of profiles (the
 * CLI and the Python package both use it): a profile comes back checked and
 * normalized as JSON, and every refusal names the file, the line and
 * column, the section and the key.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "sandlock.h"

/* A private directory with NAME.toml holding text; the path (static). */
static const char *write_profile(const char *text, mode_t mode)
{
	static char dir[64], path[80];
	snprintf(dir, sizeof(dir), "/tmp/sandlock-profile-XXXXXX");
	if (!mkdtemp(dir))
		return NULL;
	snprintf(path, sizeof(path), "%s/p.toml", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
	return path;
}

static void remove_profile(const char *path)
{
	char dir[80];
	snprintf(dir, sizeof(dir), "%s", path);
	unlink(path);
	*strrchr(dir, '/') = '\0';
	rmdir(dir);
}

/* Load text; the JSON object, or NULL with *msg (free both). */
static json_t *load(const char *text, int *code, char **msg)
{
	const char *path = write_profile(text, 0600);
	if (!path)
		return NULL;
	char *out = sandlock_profile_load(path, code, msg);
	remove_profile(path);
	json_t *j = out ? json_loads(out, 0, NULL) : NULL;
	sandlock_string_free(out);
	return j;
}

/* text is refused, with code INVALID and a message that has ":want_pos:" after
 * the path and contains want_why. */
static int refused(const char *text, const char *want_pos, const char *want_why)
{
	int code = 0;
	char *msg = NULL;
	json_t *j = load(text, &code, &msg);
	const char *after = msg ? strstr(msg, ".toml:") : NULL;
	int ok = !j && code == SANDLOCK_ERR_INVALID && after &&
	         strncmp(after + 6, want_pos, strlen(want_pos)) == 0 && strstr(msg, want_why);
	if (!ok)
		fprintf(stderr, "  '%s': got '%s' (code %d), wanted '%s' ... '%s'\n", text,
		        msg ? msg : "(accepted)", code, want_pos, want_why);
	json_decref(j);
	sandlock_string_free(msg);
	return ok;
}

TEST(a_profile_comes_back_normalized)
{
	int code = -1;
	char *msg = NULL;
	json_t *j = load("[limits]\nmemory = \"1.5G\"\ndisk = 4096\nprocesses = 8\n"
	                 "[determinism]\ntime_start = \"2000-01-01T00:00:01.5Z\"\n"
	                 "[filesystem]\nread = [\"/usr\", \"data\"]\n"
	                 "mount = [\"/w:work:ro\", \"/v:/srv\"]\n"
	                 "[program]\nexec = \"/bin/sh\"\nargs = [\"-c\"]\nuid = false\n"
	                 "env = { A = \"b\" }\n[network]\nallow = [80, \":443\"]\n",
	                 &code, &msg);
	REQUIRE(j);
	CHECK_EQ_INT(code, SANDLOCK_OK);
	CHECK(msg == NULL);
	json_t *lim = json_object_get(j, "limits");
	CHECK_EQ_INT(json_integer_value(json_object_get(lim, "memory")), 3LL << 29);
	CHECK_EQ_INT(json_integer_value(json_object_get(lim, "disk")), 4096);
	CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "determinism"),
	                                                "time_start")),
	             946684801500000000LL);
	json_t *fs = json_object_get(j, "filesystem");
	const char *rel = json_string_value(json_array_get(json_object_get(fs, "read"), 1));
	/* relative paths are beside the profile, not in the cwd */
	CHECK(rel && strncmp(rel, "/tmp/sandlock-profile-", 22) == 0 && strstr(rel, "/data"));
	json_t *m0 = json_array_get(json_object_get(fs, "mount"), 0);
	json_t *m1 = json_array_get(json_object_get(fs, "mount"), 1);
	CHECK(!strcmp(json_string_value(json_object_get(m0, "virtual")), "/w"));
	CHECK(strstr(json_string_value(json_object_get(m0, "host")), "/work") != NULL);
	CHECK(json_is_true(json_object_get(m0, "read_only")));
	CHECK(!strcmp(json_string_value(json_object_get(m1, "host")), "/srv"));
	CHECK(json_is_false(json_object_get(m1, "read_only")));
	json_t *prog = json_object_get(j, "program");
	CHECK(json_object_get(prog, "uid") == NULL); /* asks nothing: left out */
	CHECK(!strcmp(json_string_value(json_object_get(json_object_get(prog, "env"), "A")), "b"));
	json_t *allow = json_object_get(json_object_get(j, "network"), "allow");
	CHECK_EQ_INT(json_integer_value(json_array_get(allow, 0)), 80);
	CHECK(!strcmp(json_string_value(json_array_get(allow, 1)), ":443"));
	json_decref(j);
}

TEST(refusals_name_the_line_column_section_and_key)
{
	CHECK(refused("[limits]\nprocesses = \"many\"\n", "2:13: [limits] processes:",
	              "expected an integer, got string"));
	CHECK(refused("[limits]\nmemory = \"12X\"\n", "2:10: [limits] memory:", "'12X'"));
	CHECK(refused("[limits]\nmemory = \"9000000000G\"\n", "2:10:", "number too large"));
	CHECK(refused("[filesytem]\n", "1:1:", "unknown section [filesytem]"));
	CHECK(refused("[limits]\nfoo = 1\n", "2:1:", "unknown key 'foo' in [limits]"));
	CHECK(refused("x = 1\n", "1:1:", "top-level key 'x'"));
	CHECK(refused("[program]\nuid = 5\n", "2:7: [program] uid:", "not supported yet"));
	CHECK(refused("[program]\nargs = [\"x\"]\n", "2:1:", "[program] args without exec"));
	CHECK(refused("[filesystem]\nmount = [\"/a:/b\", \"/a:/c:ro\"]\n", "2:19:",
	              "'/a' is mounted twice"));
	CHECK(refused("[filesystem]\nmount = [\"a:/b\"]\n", "2:10:", "must be absolute"));
	CHECK(refused("[filesystem]\nmount = [\"/a\"]\n", "2:10:", "VIRTUAL:HOST"));
	CHECK(refused("[determinism]\ntime_start = \"2000-02-30T00:00:00Z\"\n", "2:14:",
	              "expected Unix seconds or an RFC 3339 time"));
	CHECK(refused("[network]\nallow = [\"tcp://[::1\"]\n", "2:10: [network] allow:",
	              "'tcp://[::1'"));
	CHECK(refused("[program]\nexec = \"\xff\"\n", "2:9:", "not UTF-8"));
	CHECK(refused("a.b = 1\n", "1:2:", "dotted keys"));
}

TEST(a_missing_or_untrusted_file_is_refused)
{
	int code = 0;
	char *msg = NULL;
	CHECK(sandlock_profile_load("/nonexistent/p.toml", &code, &msg) == NULL);
	CHECK_EQ_INT(code, SANDLOCK_ERR_NOT_FOUND);
	CHECK(msg && strstr(msg, "/nonexistent/p.toml: No such file"));
	sandlock_string_free(msg);
	/* Control: the same file, private, is read. */
	const char *path = write_profile("[limits]\nprocesses = 1\n", 0600);
	REQUIRE(path);
	char *out = sandlock_profile_load(path, &code, &msg);
	CHECK(out && strstr(out, "\"processes\":1"));
	sandlock_string_free(out);
	chmod(path, 0620);
	CHECK(sandlock_profile_load(path, &code, &msg) == NULL);
	CHECK_EQ_INT(code, SANDLOCK_ERR_INVALID);
	CHECK(msg && strstr(msg, "writable by other users (mode 0620): chmod go-w"));
	sandlock_string_free(msg);
	remove_profile(path);
}

TEST(points_in_time_parse_as_the_flag_and_profiles_take_them)
{
	int64_t ns = -1;
	CHECK(sandlock_parse_time("0", &ns) == 0 && ns == 0);
	CHECK(sandlock_parse_time("946684800.25", &ns) == 0 && ns == 946684800250000000LL);
	CHECK(sandlock_parse_time("2000-01-01T01:00:00+01:00", &ns) == 0 &&
	      ns == 946684800000000000LL);
	CHECK(sandlock_parse_time("2000-02-29T00:00:00Z", &ns) == 0); /* a leap day */
	CHECK(sandlock_parse_time("1900-01-01T00:00:00Z", &ns) < 0);
	CHECK(sandlock_parse_time("-1", &ns) < 0);
	CHECK(sandlock_parse_time("99999999999999999999", &ns) < 0);
	CHECK(sandlock_parse_time("yesterday", &ns) < 0);
	CHECK(sandlock_parse_time(NULL, &ns) < 0);
}
