"""Sandbox's fields are declared once, in sandlock/_fields.py's table: the
typed signature of Sandbox.__init__ must list the same keywords in the same
order, and the attributes, ==, repr and the builder calls come from it."""

import inspect

import sandlock
from sandlock import _fields

RUNTIME_ARGS = ("init_fn", "work_fn")  # fork()'s callables: not configuration


def test_signature_and_table_name_the_same_fields_in_order():
    params = [n for n, p in inspect.signature(sandlock.Sandbox.__init__).parameters.items()
              if p.kind is p.KEYWORD_ONLY and n not in RUNTIME_ARGS]
    assert params == [f.name for f in _fields.FIELDS]
    assert len(set(params)) == len(params)


def test_every_field_is_an_attribute_reading_back_its_default():
    sb = sandlock.Sandbox()
    sig = inspect.signature(sandlock.Sandbox.__init__).parameters
    for f in _fields.FIELDS:
        assert isinstance(vars(sandlock.Sandbox)[f.name], _fields.Attribute), f.name
        default = sig[f.name].default
        want = default if f.given else f.check(f.name, default)
        got = getattr(sb, f.name)
        assert got == (list(want) if isinstance(want, tuple) else want), f.name
    assert repr(sb) == "Sandbox()"


def test_repr_names_exactly_the_fields_set_and_round_trips():
    sb = sandlock.Sandbox(fs_readable=["/usr"], max_memory="64M", timeout=5,
                          net_allow_bind=[8080], clean_env=True)
    text = repr(sb)
    assert text == ("Sandbox(fs_readable=['/usr'], clean_env=True, max_memory='64M', "
                    "net_allow_bind=['8080'], timeout=5.0)")
    assert eval(text, {"Sandbox": sandlock.Sandbox}) == sb


def test_equality_follows_every_field():
    base = sandlock.Sandbox(fs_readable=["/usr"])
    assert base == sandlock.Sandbox(fs_readable=["/usr"])
    for kw in ({"fs_readable": ["/usr", "/etc"]}, {"timeout": 3}, {"max_memory": "1G"},
               {"no_coredump": True}, {"http_allow": ["GET 127.0.0.1/*"]},
               {"tmp": True}, {"max_disk": "10M"}):
        other = sandlock.Sandbox(**dict({"fs_readable": ["/usr"]}, **kw))
        assert other != base, kw
    # A size compares as given: "1024" and 1024 are different configurations
    # to the reference's dataclass, and so here.
    assert sandlock.Sandbox(max_memory="1K") != sandlock.Sandbox(max_memory=1024)

    def decide(event, ctx):
        return True

    assert sandlock.Sandbox(policy_fn=decide) == sandlock.Sandbox(policy_fn=decide)
    assert sandlock.Sandbox(policy_fn=decide) != sandlock.Sandbox(policy_fn=lambda e, c: True)


def test_a_field_reaches_the_library_through_its_row(tmp_path):
    # The row's builder call is what the run gets: a field set on the
    # instance after construction applies from the next run.
    sb = sandlock.Sandbox(fs_readable=["/usr", "/lib", "/lib64", "/bin", "/etc"])
    assert sb.run(["/bin/sh", "-c", "echo $FOO"]).stdout == b"\n"
    sb.env = {"FOO": "bar"}
    assert sb.run(["/bin/sh", "-c", "echo $FOO"]).stdout == b"bar\n"
    (tmp_path / "f").write_text("x")
    assert not sb.run(["/bin/cat", str(tmp_path / "f")]).success
    sb.fs_readable = sb.fs_readable + [str(tmp_path)]
    assert sb.run(["/bin/cat", str(tmp_path / "f")]).stdout == b"x"
