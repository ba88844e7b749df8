#!/usr/bin/env python3
"""Extract the settings a training framework accepts from its own source, at a named commit.

Writes the facts (names, types, allowed values, the commit they came from) that
tests/planner/test_export_validity.cpp checks every export against; it copies no code. It reads
the framework's source statically (Python's ast; nothing of the framework is imported or run), so
it needs only a git clone of the framework:

  tools/framework_facts.py megatron   GIT_DIR COMMIT > tests/data/frameworks/megatron-<short>.json
  tools/framework_facts.py torchtitan GIT_DIR COMMIT > tests/data/frameworks/torchtitan-<tag>.json
  tools/framework_facts.py deepspeed  GIT_DIR COMMIT > tests/data/frameworks/deepspeed-<ver>.json

What each reads:
  megatron    megatron/training/arguments.py: every parser.add_argument(...) call, and every
              ArgumentGroupFactory(Config, exclude=...) group, whose flags it derives from the
              dataclass fields as megatron/training/argument_utils.py derives them (--name-with-
              dashes; bool False: store_true, bool True: --no-X and --disable-X; Optional[T]: T;
              Literal[...]: its choices; an Enum: its member names; list[T]: nargs +;
              field(metadata={"argparse_meta": {...}}) overrides).
  torchtitan  the TOML-reading releases (v0.1.0-v0.2.2): torchtitan/config/job_config.py, the
              sections of JobConfig and their keys (nested dataclasses are dotted sections:
              quantize.linear.float8). The Python-config releases (main since Feb 2026, no
              job_config.py; "form": "python"): the fields of Trainer.Config (torchtitan/
              trainer.py) and of its training, parallelism and compile dataclasses
              (torchtitan/config/configs.py; "optional" where None is allowed), the activation
              checkpointing policies with a Config (torchtitan/distributed/
              activation_checkpoint.py), Float8LinearConverter.Config's fields with
              QuantizationConverter.Config's (torchtitan/components/quantization/), the llama3,
              deepseek_v3 and qwen3 config_registry functions, each package's model_registry flavors
              and arguments, ModelSpec's fields (torchtitan/protocols/model_spec.py), and the
              names the modules an export imports from define (deepseek_v3's mtp.py and
              models/common/config_utils.py among them).
  deepspeed   deepspeed/runtime/zero/config.py DeepSpeedZeroConfig (pydantic, extra="forbid":
              an unknown zero_optimization key is refused), deepspeed/runtime/precision_config.py
              (bf16, fp16), deepspeed/runtime/activation_checkpointing/config.py constants, and
              the top-level batch keys of deepspeed/runtime/constants.py.
"""
import ast
import json
import subprocess
import sys


def git_show(git_dir, commit, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def commit_info(git_dir, commit):
    out = subprocess.run(["git", "--git-dir", git_dir, "log", "-1", "--format=%H %cs", commit],
                         check=True, capture_output=True, text=True).stdout.split()
    return {"commit": out[0], "date": out[1]}


def literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:  # noqa: BLE001 - a non-literal is simply not recorded
        return None


def type_name(node):
    if node is None:
        return None
    if isinstance(node, ast.Name):
        return node.id if node.id in ("int", "float", "str") else "custom:" + node.id
    if isinstance(node, ast.Attribute):
        return "custom:" + node.attr
    if isinstance(node, ast.Lambda):
        return "custom:lambda"
    return "custom"


# ------------------------------------------------------------------------------------ dataclasses
class Classes:
    """The class definitions of several files, by name."""

    def __init__(self, sources):
        self.defs = {}
        self.enums = {}
        for text in sources:
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef):
                    self.defs.setdefault(node.name, node)
                    if any(isinstance(b, (ast.Name, ast.Attribute)) and
                           (getattr(b, "id", "") or getattr(b, "attr", "")).endswith("Enum")
                           for b in node.bases):
                        self.enums[node.name] = [
                            t.id for s in node.body if isinstance(s, ast.Assign)
                            for t in s.targets if isinstance(t, ast.Name)]

    def fields(self, name):
        """(name, annotation, value) of a dataclass and its parents, parents first."""
        node = self.defs[name]
        out = []
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in self.defs:
                out += self.fields(base.id)
        for s in node.body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                out = [f for f in out if f[0] != s.target.id]
                out.append((s.target.id, s.annotation, s.value))
        return out


def unwrap_optional(ann):
    """Optional[T], T | None, Annotated[T, ...] -> T."""
    if isinstance(ann, ast.Subscript) and getattr(ann.value, "id", "") in ("Optional",):
        return unwrap_optional(ann.slice)
    if isinstance(ann, ast.Subscript) and getattr(ann.value, "id", "") == "Annotated":
        return unwrap_optional(ann.slice.elts[0])
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        if isinstance(ann.right, ast.Constant) and ann.right.value is None:
            return unwrap_optional(ann.left)
    if (isinstance(ann, ast.Subscript) and getattr(ann.value, "id", "") == "Union" and
            isinstance(ann.slice, ast.Tuple) and len(ann.slice.elts) == 2 and
            isinstance(ann.slice.elts[1], ast.Constant) and ann.slice.elts[1].value is None):
        return unwrap_optional(ann.slice.elts[0])
    return ann


def value_kind(ann, classes):
    """{"type": ..., "choices": [...], "list": bool} of an annotation."""
    ann = unwrap_optional(ann)
    if isinstance(ann, ast.Name):
        if ann.id in ("int", "float", "str", "bool"):
            return {"type": ann.id}
        if ann.id in classes.enums:
            return {"type": "str", "choices": classes.enums[ann.id]}
        if ann.id in classes.defs:
            return {"type": "section", "class": ann.id}
        return {"type": "custom:" + ann.id}
    if isinstance(ann, ast.Attribute):  # Trainer.Config, ...
        return {"type": "custom:" + ast.unparse(ann)}
    if isinstance(ann, ast.Subscript):
        head = getattr(ann.value, "id", "")
        if head == "Literal":
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            choices = [literal(e) for e in elts]
            return {"type": type(choices[0]).__name__, "choices": choices}
        if head in ("list", "List"):
            inner = value_kind(ann.slice, classes)
            inner["list"] = True
            return inner
    return {"type": "custom:" + ast.unparse(ann)}


def field_call(value):
    return value if (isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field") \
        else None


def field_keyword(value, key):
    call = field_call(value)
    if call:
        for k in call.keywords:
            if k.arg == key:
                return k.value
    return None


def default_of(value):
    call = field_call(value)
    if call:
        if call.args:
            return literal(call.args[0])
        d = field_keyword(value, "default")
        return literal(d) if d is not None else None
    return literal(value) if value is not None else None


# ------------------------------------------------------------------------------------ megatron
def megatron(git_dir, commit):
    args_py = git_show(git_dir, commit, "megatron/training/arguments.py")
    config_files = [
        "megatron/core/model_parallel_config.py", "megatron/core/transformer/transformer_config.py",
        "megatron/core/transformer/enums.py", "megatron/training/config/training_config.py",
        "megatron/training/config/common_config.py", "megatron/training/config/resilience_config.py",
        "megatron/core/fault_injector.py", "megatron/core/enums.py"]
    sources = []
    for path in config_files:
        try:
            sources.append(git_show(git_dir, commit, path))
        except subprocess.CalledProcessError:
            pass
    classes = Classes(sources)
    tree = ast.parse(args_py)
    flags = {}
    lists = {t.id: literal(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.List)}

    def add(names, entry):
        for name in names:
            flags[name] = entry

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fname = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if fname == "add_argument":
            names = [a.value for a in node.args
                     if isinstance(a, ast.Constant) and str(a.value).startswith("-")]
            if not names:
                continue
            kw = {k.arg: k.value for k in node.keywords}
            action = literal(kw["action"]) if "action" in kw else None
            entry = {"takes_value": action not in ("store_true", "store_false", "store_const",
                                                   "count", "help", "version")}
            if entry["takes_value"]:
                entry["type"] = type_name(kw.get("type")) or "str"
                if "choices" in kw and literal(kw["choices"]) is not None:
                    entry["choices"] = list(literal(kw["choices"]))
                if "nargs" in kw:
                    entry["nargs"] = literal(kw["nargs"])
            if "dest" in kw:
                entry["dest"] = literal(kw["dest"])
            add(names, entry)
        elif fname == "ArgumentGroupFactory":
            cls = node.args[0].id
            exclude = set()
            for k in node.keywords:
                if k.arg == "exclude":
                    exclude = set(literal(k.value) or lists.get(getattr(k.value, "id", ""), []))
            if cls not in classes.defs:
                raise SystemExit(f"{cls}: dataclass not found in {config_files}")
            for name, ann, value in classes.fields(cls):
                if name in exclude or name.startswith("_"):
                    continue
                init = field_keyword(value, "init")
                if init is not None and literal(init) is False:
                    continue
                if "ClassVar" in ast.unparse(ann):
                    continue
                meta = field_keyword(value, "metadata")
                meta = literal(meta) if meta is not None else None
                argparse_meta = (meta or {}).get("argparse_meta", {}) if isinstance(meta, dict) \
                    else {}
                kind = value_kind(ann, classes)
                names = ["--" + name.replace("_", "-")]
                if kind["type"] == "bool" and "type" not in argparse_meta:
                    if default_of(value) is False:
                        entry = {"takes_value": False, "dest": name}
                    else:
                        entry = {"takes_value": False, "dest": name}
                        names = ["--no-" + name.replace("_", "-"),
                                 "--disable-" + name.replace("_", "-")]
                else:
                    entry = {"takes_value": True, "type": kind["type"], "dest": name}
                    if "choices" in kind:
                        entry["choices"] = kind["choices"]
                    if kind.get("list"):
                        entry["nargs"] = "+"
                for key in ("nargs", "choices"):
                    if key in argparse_meta:
                        entry[key] = argparse_meta[key]
                if argparse_meta.get("action") in ("store_true", "store_false"):
                    entry = {"takes_value": False, "dest": name}
                names = argparse_meta.get("arg_names", names)
                add(names, entry)
    version = {}
    info = git_show(git_dir, commit, "megatron/core/package_info.py")
    for line in info.splitlines():
        for key in ("MAJOR", "MINOR", "PATCH"):
            if line.startswith(key + " ="):
                version[key] = line.split("=")[1].strip()
    out = {"framework": "Megatron-LM", "repository": "NVIDIA/Megatron-LM",
           **commit_info(git_dir, commit),
           "megatron_core_version": f"{version['MAJOR']}.{version['MINOR']}.{version['PATCH']}",
           "read_from": ["megatron/training/arguments.py"] + config_files,
           "flags": dict(sorted(flags.items()))}
    return out


# ------------------------------------------------------------------------------------ torchtitan
def sections_of(classes, cls, prefix, out):
    for name, ann, value in classes.fields(cls):
        if "Suppress" in ast.unparse(ann):
            continue
        kind = value_kind(ann, classes)
        if kind["type"] == "section":
            sections_of(classes, kind["class"], prefix + [name], out)
            continue
        entry = {"type": kind["type"]}
        if "choices" in kind:
            entry["choices"] = kind["choices"]
        if kind.get("list"):
            entry["list"] = True
        out.setdefault(".".join(prefix), {})[name] = entry


def torchtitan(git_dir, commit):
    files = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", commit],
                           check=True, capture_output=True, text=True).stdout.split()
    out = {"framework": "torchtitan", "repository": "pytorch/torchtitan",
           **commit_info(git_dir, commit)}
    if "torchtitan/config/job_config.py" not in files:
        return {**out, **torchtitan_python(git_dir, commit)}
    classes = Classes([git_show(git_dir, commit, "torchtitan/config/job_config.py")])
    sections = {}
    sections_of(classes, "JobConfig", [], sections)
    out["form"] = "toml"
    out["read_from"] = ["torchtitan/config/job_config.py"]
    out["sections"] = dict(sorted(sections.items()))
    return out


def optional_annotation(ann):
    text = ast.unparse(ann)
    return "None" in text or text.startswith("Optional")


def class_fields(classes, cls):
    """{field: {"type", "choices", "list", "optional"}} of a dataclass, without Suppress'ed ones
    (kept: a config function sets them all the same, only the CLI lacks them)."""
    out = {}
    for name, ann, _ in classes.fields(cls):
        if name.startswith("_"):
            continue
        kind = value_kind(ann, classes)
        entry = {"type": kind["type"]}
        for key in ("choices", "list"):
            if key in kind:
                entry[key] = kind[key]
        if optional_annotation(ann):
            entry["optional"] = True
        out[name] = entry
    return out


def nested_config(text, outer):
    """The ClassDef `outer`.Config of a source text."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and node.name == outer:
            for inner in node.body:
                if isinstance(inner, ast.ClassDef) and inner.name == "Config":
                    return inner
    raise SystemExit(f"{outer}.Config not found")


def defined_names(text):
    """The top-level names a module defines or imports (what `from module import X` finds)."""
    names = set()
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return sorted(names)


def torchtitan_python(git_dir, commit):
    configs_py = git_show(git_dir, commit, "torchtitan/config/configs.py")
    trainer_py = git_show(git_dir, commit, "torchtitan/trainer.py")
    ac_py = git_show(git_dir, commit, "torchtitan/distributed/activation_checkpoint.py")
    quant_init = git_show(git_dir, commit, "torchtitan/components/quantization/__init__.py")
    float8_py = git_show(git_dir, commit, "torchtitan/components/quantization/float8.py")
    llama_init = git_show(git_dir, commit, "torchtitan/models/llama3/__init__.py")
    registry_py = git_show(git_dir, commit, "torchtitan/models/llama3/config_registry.py")
    classes = Classes([configs_py])
    sections = {name: class_fields(classes, cls) for name, cls in
                (("training", "TrainingConfig"), ("parallelism", "ParallelismConfig"),
                 ("compile", "CompileConfig"))}
    trainer_config = [s.target.id for s in nested_config(trainer_py, "Trainer").body
                      if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    policies = []
    for node in ast.parse(ac_py).body:
        if isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.ClassDef) and b.name == "Config" for b in node.body):
            policies.append(node.name)
    converter = {}
    for text, outer in ((quant_init, "QuantizationConverter"), (float8_py, "Float8LinearConverter")):
        body = nested_config(text, outer).body
        for s in body:
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and \
                    not s.target.id.startswith("_"):
                converter[s.target.id] = {k: v for k, v in value_kind(s.annotation, classes).items()
                                          if k in ("type", "choices", "list")}
    def flavors_of(init, table):
        for node in ast.walk(ast.parse(init)):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == table
                                                    for t in node.targets):
                return [literal(k) for k in node.value.keys]
        return []

    def registry_args_of(init):
        return [a.arg for n in ast.parse(init).body
                if isinstance(n, ast.FunctionDef) and n.name == "model_registry"
                for a in n.args.args]

    def functions_of(text):
        return [n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]

    flavors = flavors_of(llama_init, "llama3_configs")
    functions = functions_of(registry_py)
    registry_args = registry_args_of(llama_init)
    dsv3_init = git_show(git_dir, commit, "torchtitan/models/deepseek_v3/__init__.py")
    dsv3_registry = git_show(git_dir, commit, "torchtitan/models/deepseek_v3/config_registry.py")
    dsv3_mtp = git_show(git_dir, commit, "torchtitan/models/deepseek_v3/mtp.py")
    qwen3_init = git_show(git_dir, commit, "torchtitan/models/qwen3/__init__.py")
    qwen3_registry = git_show(git_dir, commit, "torchtitan/models/qwen3/config_registry.py")
    config_utils = git_show(git_dir, commit, "torchtitan/models/common/config_utils.py")
    spec_py = git_show(git_dir, commit, "torchtitan/protocols/model_spec.py")
    spec_fields = [s.target.id for n in ast.parse(spec_py).body
                   if isinstance(n, ast.ClassDef) and n.name == "ModelSpec"
                   for s in n.body if isinstance(s, ast.AnnAssign)]
    return {"form": "python",
            "read_from": ["torchtitan/config/configs.py", "torchtitan/trainer.py",
                          "torchtitan/distributed/activation_checkpoint.py",
                          "torchtitan/components/quantization/__init__.py",
                          "torchtitan/components/quantization/float8.py",
                          "torchtitan/models/llama3/__init__.py",
                          "torchtitan/models/llama3/config_registry.py",
                          "torchtitan/models/deepseek_v3/__init__.py",
                          "torchtitan/models/deepseek_v3/config_registry.py",
                          "torchtitan/models/deepseek_v3/mtp.py",
                          "torchtitan/models/qwen3/__init__.py",
                          "torchtitan/models/qwen3/config_registry.py",
                          "torchtitan/models/common/config_utils.py",
                          "torchtitan/protocols/model_spec.py"],
            "trainer_config": trainer_config,
            "sections": sections,
            "activation_checkpoint": policies,
            "float8_linear_converter": dict(sorted(converter.items())),
            "llama3_flavors": flavors,
            "model_registry_args": registry_args,
            "deepseek_v3_flavors": flavors_of(dsv3_init, "deepseekv3_configs"),
            "deepseek_v3_model_registry_args": registry_args_of(dsv3_init),
            "qwen3_flavors": flavors_of(qwen3_init, "qwen3_configs"),
            "qwen3_model_registry_args": registry_args_of(qwen3_init),
            "model_spec_fields": spec_fields,
            "imports": {
                "torchtitan.trainer": defined_names(trainer_py),
                "torchtitan.distributed.activation_checkpoint": defined_names(ac_py),
                "torchtitan.components.quantization": defined_names(quant_init),
                "torchtitan.models.llama3": defined_names(llama_init),
                "torchtitan.models.llama3.config_registry": functions,
                "torchtitan.models.deepseek_v3": defined_names(dsv3_init),
                "torchtitan.models.deepseek_v3.config_registry": functions_of(dsv3_registry),
                "torchtitan.models.deepseek_v3.mtp": defined_names(dsv3_mtp),
                "torchtitan.models.qwen3": defined_names(qwen3_init),
                "torchtitan.models.qwen3.config_registry": functions_of(qwen3_registry),
                "torchtitan.models.common.config_utils": defined_names(config_utils)}}


# ------------------------------------------------------------------------------------ deepspeed
def deepspeed(git_dir, commit):
    zero = Classes([git_show(git_dir, commit, "deepspeed/runtime/zero/config.py")])
    precision = Classes([git_show(git_dir, commit, "deepspeed/runtime/precision_config.py")])

    def model_keys(classes, cls):
        keys = {}
        for name, ann, value in classes.fields(cls):
            kind = value_kind(ann, classes)
            entry = {"type": "int" if kind["type"] in ("ZeroStageEnum",) or
                     "ZeroStageEnum" in kind["type"] else kind["type"]}
            if "ZeroStageEnum" in kind["type"]:
                entry["choices"] = [0, 1, 2, 3]
            keys[name] = entry
            if isinstance(value, ast.Call):
                for k in value.keywords:
                    if k.arg == "alias":
                        keys[literal(k.value)] = entry
        return keys

    act = git_show(git_dir, commit, "deepspeed/runtime/activation_checkpointing/config.py")
    # ACT_CHKPT_X = 'key' beside ACT_CHKPT_X_DEFAULT = value: the key, typed by its default
    # (None: number_checkpoints, an int).
    constants = {t.id: literal(n.value) for n in ast.walk(ast.parse(act))
                 if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    act_keys = {}
    for name, key in constants.items():
        if name.startswith("ACT_CHKPT_") and name + "_DEFAULT" in constants:
            default = constants[name + "_DEFAULT"]
            act_keys[key] = {"type": "bool" if isinstance(default, bool) else "int"}
    version = git_show(git_dir, commit, "version.txt").strip()
    return {"framework": "DeepSpeed", "repository": "deepspeedai/DeepSpeed",
            **commit_info(git_dir, commit), "version": version,
            "read_from": ["deepspeed/runtime/constants.py", "deepspeed/runtime/zero/config.py",
                          "deepspeed/runtime/precision_config.py",
                          "deepspeed/runtime/activation_checkpointing/config.py"],
            "top_level": {"train_batch_size": {"type": "int"},
                          "train_micro_batch_size_per_gpu": {"type": "int"},
                          "gradient_accumulation_steps": {"type": "int"},
                          "zero_optimization": {"type": "object"}, "bf16": {"type": "object"},
                          "fp16": {"type": "object"},
                          "activation_checkpointing": {"type": "object"}},
            "zero_optimization": model_keys(zero, "DeepSpeedZeroConfig"),
            "zero_optimization_refuses_unknown_keys": True,
            "bf16": model_keys(precision, "DeepSpeedBF16Config"),
            "fp16": model_keys(precision, "DeepSpeedFP16Config"),
            "activation_checkpointing": act_keys}


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("megatron", "torchtitan", "deepspeed"):
        sys.exit(__doc__)
    json.dump(globals()[sys.argv[1]](sys.argv[2], sys.argv[3]), sys.stdout, indent=1)
    sys.stdout.write("\n")
