/*
 * test_cow.c — the copy-on-write workdir (builtins/cow/, cow/): a
 * shell workload under workdir is staged, listed, and committed or
 * thrown away; the real tree is never written during the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/xattr.h>

#include "harness.h"
#include "testutil.h"

/* The whole tree as one string ("path:content;" sorted), for comparisons. */
static char *tree_digest(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd,
	         "cd %s && find . | sort | while read f; do echo \"$f\"; "
	         "[ -f \"$f\" ] && cat \"$f\"; done", dir);
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, p);
	buf[n] = '\0';
	pclose(p);
	return strdup(buf);
}

static void make_tree(const char *dir)
{
	char p[256];
	snprintf(p, sizeof p, "%s/a", dir);
	tu_write_file(p, "old\n");
	snprintf(p, sizeof p, "%s/d", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/d/k", dir);
	tu_write_file(p, "keep\n");
}

/* dir/x and dir/y are one inode (hard links). */
static bool same_inode(const char *dir, const char *x, const char *y)
{
	char p[300], q[300];
	struct stat a, b;
	snprintf(p, sizeof p, "%s/%s", dir, x);
	snprintf(q, sizeof q, "%s/%s", dir, y);
	return stat(p, &a) == 0 && stat(q, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static sandlock_result_t *run_in(const char *dir, int action, const char *script)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_workdir(b, dir);
	sandlock_sandbox_builder_on_exit(b, action);
	sandlock_sandbox_builder_cwd(b, dir);
	return tu_run_sh(b, "/bin/sh", script);
}

static const char *WORKLOAD = "echo new > a; echo x > b; rm d/k; mkdir e; echo y > e/f; "
                              "mv b c; cat a c; ls; ls d";


TEST(abort_leaves_tree_identical_and_lists_changes)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	char *before = tree_digest(dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_ABORT, WORKLOAD);
	REQUIRE(r);
	/* The guest saw its own writes (merged view, whiteouts hidden). */
	CHECK(tu_out_is(r, "new\nx\na\nc\nd\ne\n"));
	char ch[1024];
	tu_changes_text(r, ch, sizeof ch);
	CHECK(strcmp(ch, "M a\nA c\nD d/k\nA e\nA e/f\n") == 0);
	char *after = tree_digest(dir);
	CHECK(before && after && strcmp(before, after) == 0);
	free(before);
	free(after);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

TEST(commit_applies_the_change_list)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_COMMIT, WORKLOAD);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_change_count(r, true), 0);
	CHECK(sandlock_result_cow_kept(r) == NULL);
	char *after = tree_digest(dir);
	CHECK(after && strcmp(after, ".\n./a\nnew\n./c\nx\n./d\n./e\n./e/f\ny\n") == 0);
	free(after);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* Hostile: write through an O_PATH fd's magic link, and a direct write
 * with the workdir's real path spelled via /proc/self/cwd. */
TEST(no_write_reaches_the_real_tree_before_commit)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	char *before = tree_digest(dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_ABORT,
	                              "exec 3<a; echo evil 1<>/proc/self/fd/3; "
	                              "echo evil > /proc/self/cwd/a; echo evil >> a; true");
	REQUIRE(r);
	char *after = tree_digest(dir);
	CHECK(before && after && strcmp(before, after) == 0);
	free(before);
	free(after);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

TEST(fs_write_over_workdir_is_refused)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_write(b, "/tmp");
	sandlock_sandbox_builder_workdir(b, "/tmp");
	sandlock_sandbox_builder_fs_storage(b, "/tmp");
	int err;
	char *msg;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	CHECK(sb == NULL);
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
}

/* Runs script over make_tree()'s tree with action; checks what the guest
 * printed, the change list, and the tree afterwards. */
static void check_run(int action, uint64_t max_disk, const char *script, const char *out,
                      const char *changes, const char *tree_after)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	char *before = tree_digest(dir);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, "/dev/zero");
	sandlock_sandbox_builder_workdir(b, dir);
	sandlock_sandbox_builder_on_exit(b, action);
	sandlock_sandbox_builder_max_disk(b, max_disk);
	sandlock_sandbox_builder_cwd(b, dir);
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	if (out)
		CHECK(tu_out_is(r, out));
	char ch[4096];
	tu_changes_text(r, ch, sizeof ch);
	if (changes && strcmp(ch, changes) != 0)
		fprintf(stderr, "changes:\n%s", ch);
	CHECK(!changes || strcmp(ch, changes) == 0);
	char *after = tree_digest(dir);
	if (tree_after && (!after || strcmp(after, tree_after) != 0))
		fprintf(stderr, "tree:\n%s", after ? after : "(none)");
	CHECK(after && strcmp(after, tree_after ? tree_after : before) == 0);
	free(before);
	free(after);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

TEST(rename_over_an_existing_file_and_of_a_real_directory)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 0,
	          "echo n > new; mv new a; mv d e; ls; ls e; cat a e/k; [ -e d/k ] || echo gone",
	          "a\ne\nk\nn\nkeep\ngone\n", "M a\nD d\nD d/k\nA e\nA e/k\n",
	          ".\n./a\nn\n./e\n./e/k\nkeep\n");
}

TEST(delete_and_recreate_keeps_old_children_hidden)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 0,
	          "rm a; echo again > a; rm -r d; mkdir d; ls d; echo x > d/new; cat a",
	          "again\n", "M a\nD d/k\nA d/new\n", ".\n./a\nagain\n./d\n./d/new\nx\n");
}

/* A real directory replaced by a file and a real file replaced by a
 * directory, written into and listed through "..": before, creating in
 * the new directory failed (ENOTDIR from the real file behind it), "a/.."
 * went to the kernel (ENOTDIR), and the commit removed the real d, then
 * called the file "changed meanwhile" and kept it out. */
TEST(type_changes_are_seen_and_committed)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 0,
	          "rm -r d && echo x > d; rm a; mkdir a; echo in > a/y; mkdir a/z; ls a; ls a/..; cat d",
	          "y\nz\na\nd\nx\n", "M a\nA a/y\nA a/z\nM d\nD d/k\n",
	          ".\n./a\n./a/y\nin\n./a/z\n./d\nx\n");
}

/* renameat2(RENAME_EXCHANGE) of two directories, and of a directory and
 * a file, swaps the merged trees (before: EXDEV), and commits as such. */
TEST(rename_exchange_swaps_directories)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 0,
	          "mkdir -p e/s && echo es > e/s/f; X='import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
	          "print(l.renameat2(-100,sys.argv[1].encode(),-100,sys.argv[2].encode(),2), "
	          "ctypes.get_errno())'; python3 -c \"$X\" d e; ls d e; cat d/s/f e/k; "
	          "python3 -c \"$X\" a e; cat e; ls a",
	          "0 0\nd:\ns\n\ne:\nk\nes\nkeep\n0 0\nold\nk\n",
	          "M a\nA a/k\nD d/k\nA d/s\nA d/s/f\nA e\n",
	          ".\n./a\n./a/k\nkeep\n./d\n./d/s\n./d/s/f\nes\n./e\nold\n");
}

/* coreutils cp/mv/ln open their target directory O_PATH: an O_PATH file
 * cannot be installed in the caller, so a staged target failed ("cannot
 * overwrite directory with non-directory") and `cp -r n m` into a renamed
 * directory silently merged n's contents into m instead. */
TEST(o_path_opens_of_staged_directories_work)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 0,
	          "mkdir x; cp a x; ls x; mv d m; mkdir n; cp -r n m; ls m; ln -s x sx; cp a sx/b; ls x",
	          "a\nk\nn\na\nb\n",
	          "D d\nD d/k\nA m\nA m/k\nA m/n\nA n\nA sx\nA x\nA x/a\nA x/b\n",
	          ".\n./a\nold\n./m\n./m/k\nkeep\n./m/n\n./n\n./sx\n./x\n./x/a\nold\n./x/b\nold\n");
}

/* A change of a directory's mode after a change inside it: the commit
 * used to call the directory "changed meanwhile" (never recorded before
 * the layer made it as a parent) and leave the mode out. */
TEST(a_directory_changed_after_its_contents_commits_whole)
{
	char dir[TU_TMPDIR_LEN], p[300];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_COMMIT, "echo x > d/new; chmod 700 d");
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_change_count(r, true), 0);
	CHECK(sandlock_result_cow_error(r) == NULL);
	struct stat st;
	snprintf(p, sizeof p, "%s/d", dir);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0700);
	snprintf(p, sizeof p, "%s/d/new", dir);
	CHECK(access(p, F_OK) == 0);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* Real hard links stay one file in the view: a write through one name
 * shows through the other (renamed or not), and the commit keeps them
 * one inode.  A directory holding both names moves without a conflict
 * (its own deletions changed the file's ctime). */
TEST(real_hard_links_stay_one_file)
{
	char dir[TU_TMPDIR_LEN], p[300], q[300];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	snprintf(p, sizeof p, "%s/a", dir);
	snprintf(q, sizeof q, "%s/h", dir);
	REQUIRE(link(p, q) == 0);
	snprintf(p, sizeof p, "%s/d/k", dir);
	snprintf(q, sizeof q, "%s/d/k2", dir);
	REQUIRE(link(p, q) == 0);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_COMMIT,
	                              "echo x >> a; cat h; mv h h2; echo y >> h2; cat a; "
	                              "stat -c %h a; mv d e; echo z >> e/k; cat e/k2");
	REQUIRE(r);
	CHECK(tu_out_is(r, "old\nx\nold\nx\ny\n2\nkeep\nz\n"));
	CHECK_EQ_INT(sandlock_result_change_count(r, true), 0);
	CHECK(same_inode(dir, "a", "h2") && same_inode(dir, "e/k", "e/k2"));
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* What the kernel refuses to name: "." or ".." as the name a call
 * creates, removes or renames (collapsed, they named real entries: the
 * cwd renamed, a directory removed at commit); a directory's link count
 * in the merged view; the workdir's own mode (kept by the layer, listed
 * as "M ." and committed; its times cannot be staged: EPERM). */
TEST(dots_link_counts_and_the_workdir_itself)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 0,
	          "cd d; mv . ../m 2>&- || echo busy; rmdir . 2>&- || echo inval; cd ..; "
	          "rmdir d/.. 2>&- || echo notempty; mkdir d/. 2>&- || echo exists; ls; "
	          "mkdir -p d/n/o; mkdir n2; stat -c %h . d d/n; touch d/f; stat -c %h d; "
	          "chmod 711 . && stat -c %a .; touch . 2>&- || echo eperm",
	          "busy\ninval\nnotempty\nexists\na\nd\n4\n3\n3\n3\n711\neperm\n",
	          "M .\nA d/f\nA d/n\nA d/n/o\nA n2\n",
	          ".\n./a\nold\n./d\n./d/f\n./d/k\nkeep\n./d/n\n./d/n/o\n./n2\n");
}

/* A real directory the run moves keeps being the cwd of a process in it
 * (a write there lands at the new place, getcwd names it); a new
 * directory made at the old name is a different one; find(1) walks a
 * tree of real and staged directories without "directory changed"
 * errors (stat names the inode an open returns). */
TEST(moved_real_directories_stay_the_cwd)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 0,
	          "cd d; mv ../d ../e; echo x > f; pwd -P | sed 's|.*/||'; cd ..; "
	          "mkdir -p d/n/o; mv e d/n/o/e2; find . | sort; cat d/n/o/e2/f",
	          "e\n.\n./a\n./d\n./d/n\n./d/n/o\n./d/n/o/e2\n./d/n/o/e2/f\n./d/n/o/e2/k\nx\n",
	          "D d/k\nA d/n\nA d/n/o\nA d/n/o/e2\nA d/n/o/e2/f\nA d/n/o/e2/k\n",
	          ".\n./a\nold\n./d\n./d/n\n./d/n/o\n./d/n/o/e2\n./d/n/o/e2/f\nx\n./d/n/o/e2/k\nkeep\n");
}

/* setxattr/removexattr by path under workdir are staged (before: EPERM,
 * ENOENT on a staged file), an xattr-only change is listed and committed,
 * a real file's user.* xattrs survive its copy-up and commit, and
 * trusted.* stays out of reach (the caller's rights). */
TEST(xattrs_are_staged_and_committed)
{
	char dir[TU_TMPDIR_LEN], p[300];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	snprintf(p, sizeof p, "%s/d/k", dir);
	if (setxattr(p, "user.keep", "yes", 3, 0) != 0) {
		tu_rm_rf(dir);
		SKIP("no user xattrs on this filesystem");
	}
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_COMMIT,
	                              "python3 -c \"import os\n"
	                              "os.setxattr('a', 'user.k', b'v')\n"
	                              "open('n', 'w').close(); os.setxattr('n', 'user.x', b'1')\n"
	                              "os.removexattr('n', 'user.x'); print(os.listxattr('n'))\n"
	                              "try: os.setxattr('n', 'trusted.t', b'1')\n"
	                              "except OSError as e: print(e.errno)\n"
	                              "open('d/k', 'a').write('more')\n"
	                              "print(os.getxattr('a', 'user.k'), os.getxattr('d/k', 'user.keep'))\"");
	REQUIRE(r);
	CHECK(tu_out_is(r, "[]\n1\nb'v' b'yes'\n"));
	char ch[256];
	tu_changes_text(r, ch, sizeof ch);
	CHECK(strcmp(ch, "M a\nM d/k\nA n\n") == 0);
	char v[16];
	snprintf(p, sizeof p, "%s/a", dir);
	CHECK(getxattr(p, "user.k", v, sizeof v) == 1 && v[0] == 'v');
	snprintf(p, sizeof p, "%s/d/k", dir);
	CHECK(getxattr(p, "user.keep", v, sizeof v) == 3 && memcmp(v, "yes", 3) == 0);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

TEST(the_workdir_mode_commits)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	REQUIRE(chmod(dir, 0755) == 0);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_COMMIT, "chmod 750 .");
	REQUIRE(r);
	struct stat st;
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0750);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* A hard link is staged as one inode (a write through one name shows
 * through the other); committed, the names stay one inode (before, each
 * got its own copy), across directories too. */
TEST(hardlinks_share_the_staged_inode)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 0, "ln a h; echo more >> h; cat a; ln d/k d/k2; rm d/k; cat d/k2",
	          "old\nmore\nkeep\n", "M a\nD d/k\nA d/k2\nA h\n",
	          ".\n./a\nold\nmore\n./d\n./d/k2\nkeep\n./h\nold\nmore\n");
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_COMMIT,
	                              "echo n > new; ln new d/n2; ln d/k d/k3; ln a e1; ln a e2");
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_change_count(r, true), 0);
	CHECK(same_inode(dir, "new", "d/n2") && same_inode(dir, "d/k", "d/k3") &&
	      same_inode(dir, "a", "e1") && same_inode(dir, "e1", "e2"));
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* dd past max_disk: ENOSPC mid-write, the run fails, on_error ABORT
 * leaves the tree as it was; the guest saw exactly the quota written. */
TEST(max_disk_hit_mid_write_is_enospc_and_nothing_is_committed)
{
	check_run(SANDLOCK_BRANCH_COMMIT, 128 * 1024,
	          "dd if=/dev/zero of=big bs=32k count=8 || echo enospc; wc -c < big; "
	          "exit 1",
	          "enospc\n131072\n", "A big\n", NULL);
}

/* Symlinks are followed in the merged view, not in the real tree: a real
 * link to a directory holding a staged file, an absolute link into
 * workdir, a write through a real link (staged at its target, the link
 * kept), a staged link, and a real link replaced by a directory (what
 * lay behind it is gone from the view).  Before cowpath.c each of these
 * saw the real tree, failed with EXDEV, or broke the commit. */
TEST(symlinks_resolve_in_the_merged_view)
{
	char dir[TU_TMPDIR_LEN], p[256], q[256];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	snprintf(p, sizeof p, "%s/l", dir);
	REQUIRE(symlink("d", p) == 0);
	snprintf(p, sizeof p, "%s/abs", dir);
	snprintf(q, sizeof q, "%s/d/k", dir);
	REQUIRE(symlink(q, p) == 0);
	char script[1024];
	snprintf(script, sizeof script,
	         "echo new > d/k; cat l/k; cat abs; echo x > l/g; cat d/g; ln -s d/k s; cat s;"
	         "rm l; mkdir l; echo z > l/z; ls l; cat l/k 2>/dev/null || echo hidden; cat %s/l/z",
	         dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_COMMIT, script);
	REQUIRE(r);
	CHECK(tu_out_is(r, "new\nnew\nx\nnew\nz\nhidden\nz\n"));
	char ch[1024];
	tu_changes_text(r, ch, sizeof ch);
	CHECK(strcmp(ch, "A d/g\nM d/k\nM l\nA l/z\nA s\n") == 0);
	if (strcmp(ch, "A d/g\nM d/k\nM l\nA l/z\nA s\n") != 0)
		fprintf(stderr, "  changes '%s'\n", ch);
	CHECK_EQ_INT(sandlock_result_change_count(r, true), 0);
	struct stat st;
	char t[256];
	snprintf(p, sizeof p, "%s/l/z", dir);
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
	snprintf(p, sizeof p, "%s/s", dir);
	ssize_t n = readlink(p, t, sizeof t - 1);
	CHECK(n == 3 && memcmp(t, "d/k", 3) == 0);
	snprintf(p, sizeof p, "%s/d/g", dir);
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* Programs made in the run are run from the upper layer (builtins/cow/
 * do_exec): a copied binary with its argv intact, the same as the last
 * command of "sh -c" (dash puts argv right after the string: the short
 * /dev/fd form, execpath.c, which a script then sees as its $0), a #!
 * script that sources a sibling through its $0, and one in a directory
 * that exists only in the layer; a file without x bits is refused.  Before,
 * each failed with ENOENT (the kernel looked at the real tree). */
TEST(staged_programs_run_with_their_argv)
{
	check_run(SANDLOCK_BRANCH_ABORT, 0,
	          "cp /bin/echo ./e; ./e one two; sh -c ./e; sh -c './e three'; "
	          "printf '#!/bin/sh\\n. \"$(dirname \"$0\")/lib\"; echo script $# \"$1\" $v\\n' > s; "
	          "echo v=sourced > lib; chmod +x s; ./s arg; "
	          "printf '#!/bin/sh\\necho script2 $#\\n' > s2; chmod +x s2; sh -c ./s2; "
	          "mkdir sub; cp /bin/true sub/t; sub/t && echo true-ran; "
	          "cp a nx; ./nx 2>/dev/null || echo not-executable",
	          "one two\n\nthree\nscript 1 arg sourced\nscript2 0\ntrue-ran\nnot-executable\n",
	          "A e\nA lib\nA nx\nA s\nA s2\nA sub\nA sub/t\n", NULL);
}

/* cd into a directory that exists only in the layer (mkdir build && cd
 * build): the kernel chdirs to the layer's copy while the caller's string
 * is swapped (execpath.c, sl_path_swap), put back before it runs on, so
 * $PWD is what the shell asked for; getcwd names the workdir path;
 * relative paths from there (../a, a staged program) see the merged view.
 * Before, cd failed with ENOENT. */
TEST(chdir_into_a_staged_directory)
{
	check_run(SANDLOCK_BRANCH_ABORT, 0,
	          "mkdir -p b/c && cd b/c && case $PWD in */b/c) echo pwd-ok;; *) echo $PWD;; esac; "
	          "case $(pwd -P)/$(/bin/pwd) in */b/c/*/b/c) echo getcwd-ok;; *) pwd -P;; esac; "
	          "echo in > f; cat ../../a; cp /bin/echo e; ./e ran here; ls; "
	          "cd .. && ls && cd \"$OLDPWD\" && cat f; cd /nonexistent-dir 2>/dev/null || echo enoent",
	          "pwd-ok\ngetcwd-ok\nold\nran here\ne\nf\nc\nin\nenoent\n",
	          "A b\nA b/c\nA b/c/e\nA b/c/f\n", NULL);
}

/* ---------------- hostile: the exec and chdir rewrites ---------------- */

static char *probe_path(void)
{
	static char p[4200];
	snprintf(p, sizeof p, "%s/execprobe", tu_helpers_dir());
	return p;
}

/* `execprobe ARGS` in a COW workdir of its own (ABORT); its stdout. */
static char *probe_in_workdir(const char *args)
{
	char dir[TU_TMPDIR_LEN], script[5000];
	if (!tu_mkdtemp(dir, "cow"))
		return NULL;
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, tu_helpers_dir());
	sandlock_sandbox_builder_workdir(b, dir);
	sandlock_sandbox_builder_on_exit(b, SANDLOCK_BRANCH_ABORT);
	sandlock_sandbox_builder_cwd(b, dir);
	snprintf(script, sizeof script, "%s %s", probe_path(), args);
	sandlock_result_t *r = tu_run_sh(b, "/bin/sh", script);
	char *out = r ? sandlock_result_stdout(r) : NULL;
	sandlock_result_free(r);
	tu_rm_rf(dir);
	return out;
}

/* The short /dev/fd/N form installs the file in the caller before the
 * exec: it must be a file the guest could open itself.  A staged link to
 * a program outside every grant (readable and executable outside, the
 * control) is exec'd with argv right behind the path; before, the
 * supervisor opened it unconfined and the failed exec left the guest an
 * fd reading it. */
TEST(hostile_exec_short_form_leaks_no_denied_file)
{
	char secret_dir[TU_TMPDIR_LEN], secret[600], args[700];
	REQUIRE(tu_mkdtemp(secret_dir, "secret"));
	snprintf(secret, sizeof secret, "%s/a_rather_long_name_for_a_secret_program", secret_dir);
	tu_write_file(secret, "TOPSECRET\n");
	REQUIRE(chmod(secret, 0755) == 0);
	const char *ctl[] = { probe_path(), "open", secret, NULL };
	CHECK(strcmp(tu_outside_line(ctl), "direct: opened") == 0);
	snprintf(args, sizeof args, "shortfd %s", secret);
	char *out = probe_in_workdir(args);
	CHECK(out && strstr(out, "direct: Permission denied"));
	CHECK(out && !strstr(out, "TOPSECRET"));
	if (out && strstr(out, "TOPSECRET"))
		fprintf(stderr, "  got '%s'\n", out);
	sandlock_string_free(out);
	tu_rm_rf(secret_dir);
}

/* posix_spawnp over PATH whose first match is a staged file without x
 * bits: the exec is refused before any rewrite (as the kernel would), so
 * the vfork child goes on to /usr/bin/true.  Before, the refusal came
 * from the kernel after the rewrite, the supervisor waited seconds for
 * an exec that never finished, and the restore then clobbered the
 * child's next path: posix_spawnp failed (EACCES). */
TEST(hostile_spawn_of_a_non_executable_staged_file_goes_on_along_path)
{
	char *out = probe_in_workdir("spawn_nonexec");
	CHECK(tu_str_is(out, "posix_spawnp: 0 status 0\n"));
	sandlock_string_free(out);
}

/* Argv slots pointing into the range the new path covers are copied by
 * the supervisor (this process), outside the sandbox's memory limit:
 * 20000 slots to one 64 KiB string is refused (ENAMETOOLONG) once the
 * copies pass the scratch bound, instead of costing 1.3 GB first. */
TEST(hostile_argv_flood_is_refused_not_copied)
{
	struct rusage before, after;
	REQUIRE(getrusage(RUSAGE_SELF, &before) == 0);
	char *out = probe_in_workdir("argv_flood 20000");
	REQUIRE(getrusage(RUSAGE_SELF, &after) == 0);
	CHECK(after.ru_maxrss - before.ru_maxrss < 200 * 1024); /* KiB */
	CHECK(tu_str_is(out, "execve: -1 File name too long\n"));
	sandlock_string_free(out);
}

/* A chdir whose string ends a mapping cannot take the longer host path:
 * ENAMETOOLONG, never EFAULT (the guest's pointer is valid). */
TEST(chdir_at_the_end_of_a_mapping_is_enametoolong)
{
	char *out = probe_in_workdir("chdir_edge");
	CHECK(tu_str_is(out, "chdir at the end of a mapping: File name too long\n"));
	sandlock_string_free(out);
}

/* How many of 1000 directories, then of 1000 symlinks with 4000-byte
 * targets, the guest makes in the layer under quota (0: none). */
static void names_made(uint64_t quota, int *dirs, int *links)
{
	char dir[TU_TMPDIR_LEN];
	*dirs = *links = -1;
	REQUIRE(tu_mkdtemp(dir, "cow"));
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_workdir(b, dir);
	sandlock_sandbox_builder_on_exit(b, SANDLOCK_BRANCH_ABORT);
	sandlock_sandbox_builder_max_disk(b, quota);
	sandlock_sandbox_builder_cwd(b, dir);
	sandlock_sandbox_builder_timeout_ms(b, 60000);
	sandlock_result_t *r = tu_run_sh(b, "/bin/sh",
	    "t=$(printf '%04000d' 0); i=0; while [ $i -lt 1000 ] && mkdir d$i 2>/dev/null; "
	    "do i=$((i+1)); done; echo $i; i=0; "
	    "while [ $i -lt 1000 ] && ln -s $t s$i 2>/dev/null; do i=$((i+1)); done; echo $i");
	char *o = r ? sandlock_result_stdout(r) : NULL;
	if (!o || sscanf(o, "%d %d", dirs, links) != 2)
		fprintf(stderr, "  the guest printed '%s'\n", o ? o : "(no run)");
	sandlock_string_free(o);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* Directories and symlinks cost the layer a block each (and a symlink
 * its target): without a quota 1000 of each are made (the layer would
 * grow without bound: the control); under 1 MiB at most 256 names in
 * all fit. */
TEST(max_disk_charges_every_name_made)
{
	int dirs, links;
	names_made(0, &dirs, &links);
	CHECK_EQ_INT(dirs, 1000);
	CHECK_EQ_INT(links, 1000);
	names_made(1024 * 1024, &dirs, &links);
	CHECK(dirs >= 0 && links >= 0 && dirs + links <= 256);
	if (dirs + links > 256)
		fprintf(stderr, "  under 1 MiB: %d directories, %d symlinks\n", dirs, links);
}
