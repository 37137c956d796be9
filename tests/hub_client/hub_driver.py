"""Drives the official huggingface_hub client for tests/it/hub_server_fidelity.rs.

One JSON request per line on stdin, {"op": NAME, "args": {...}}; one JSON
answer per line on stdout: {"ok": true, "result": ...} or
{"ok": false, "error": {"type", "types", "status", "message"}}.
Everything else the client prints goes to stderr. The environment
(HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_DISABLE_XET) is set by the Rust test.

The first answer, sent unasked, reports the client version.
"""

import json
import sys
import traceback

PROTOCOL = sys.stdout
sys.stdout = sys.stderr  # keep stray prints off the protocol stream

import huggingface_hub  # noqa: E402
from huggingface_hub import HfApi, hf_hub_download, snapshot_download  # noqa: E402
from huggingface_hub.hf_api import RepoFile  # noqa: E402
from huggingface_hub.utils._runtime import is_xet_available  # noqa: E402


def send(message):
    PROTOCOL.write(json.dumps(message) + "\n")
    PROTOCOL.flush()


def token_arg(args):
    # JSON false means "send no token"; absent means the client's default (HF_TOKEN).
    return {"token": args["token"]} if "token" in args else {}


def entry(item):
    if isinstance(item, RepoFile):
        lfs = None
        if item.lfs is not None:
            lfs = {"sha256": item.lfs.sha256, "size": item.lfs.size, "pointer_size": item.lfs.pointer_size}
        return {"type": "file", "path": item.path, "size": item.size, "blob_id": item.blob_id, "lfs": lfs}
    return {"type": "directory", "path": item.path, "tree_id": item.tree_id}


def info(repo):
    siblings = []
    for sibling in repo.siblings or []:
        lfs = None
        if sibling.lfs is not None:
            lfs = {"sha256": sibling.lfs.sha256, "size": sibling.lfs.size, "pointer_size": sibling.lfs.pointer_size}
        siblings.append({"rfilename": sibling.rfilename, "size": sibling.size, "blob_id": sibling.blob_id, "lfs": lfs})
    return {"id": repo.id, "sha": repo.sha, "private": repo.private, "siblings": siblings}


def run(op, args):
    api = HfApi()
    if op == "create_repo":
        url = api.create_repo(
            args["repo_id"], repo_type="dataset", exist_ok=args.get("exist_ok", False),
            private=args.get("private"), **token_arg(args))
        return {"url": str(url)}
    if op == "upload_folder":
        commit = api.upload_folder(
            repo_id=args["repo_id"], repo_type="dataset", folder_path=args["folder"],
            parent_commit=args.get("parent_commit"), commit_message=args.get("message"),
            delete_patterns=args.get("delete_patterns"), **token_arg(args))
        return {"oid": commit.oid, "commit_url": commit.commit_url}
    if op == "delete_file":
        commit = api.delete_file(args["path"], args["repo_id"], repo_type="dataset", **token_arg(args))
        return {"oid": commit.oid}
    if op == "delete_folder":
        commit = api.delete_folder(args["path"], args["repo_id"], repo_type="dataset", **token_arg(args))
        return {"oid": commit.oid}
    if op == "list_repo_tree":
        items = api.list_repo_tree(
            args["repo_id"], path_in_repo=args.get("path"), repo_type="dataset",
            revision=args.get("revision"), recursive=args.get("recursive", False), **token_arg(args))
        return [entry(item) for item in items]
    if op == "get_paths_info":
        items = api.get_paths_info(
            args["repo_id"], args["paths"], repo_type="dataset", revision=args.get("revision"), **token_arg(args))
        return [entry(item) for item in items]
    if op == "snapshot_download":
        path = snapshot_download(
            args["repo_id"], repo_type="dataset", revision=args.get("revision"),
            local_dir=args.get("local_dir"), **token_arg(args))
        return {"path": path}
    if op == "hf_hub_download":
        path = hf_hub_download(
            args["repo_id"], args["filename"], repo_type="dataset", revision=args.get("revision"),
            local_dir=args.get("local_dir"), **token_arg(args))
        return {"path": path}
    if op == "dataset_info":
        return info(api.dataset_info(
            args["repo_id"], revision=args.get("revision"),
            files_metadata=args.get("files_metadata", False), **token_arg(args)))
    if op == "repo_info":
        return info(api.repo_info(
            args["repo_id"], repo_type="dataset", revision=args.get("revision"), **token_arg(args)))
    if op == "list_repo_commits":
        commits = api.list_repo_commits(
            args["repo_id"], repo_type="dataset", revision=args.get("revision"), **token_arg(args))
        return [{"commit_id": c.commit_id, "authors": c.authors, "created_at": c.created_at.isoformat(),
                 "title": c.title, "message": c.message} for c in commits]
    if op == "whoami":
        return api.whoami(**token_arg(args))
    raise ValueError(f"hub_driver: unknown op {op!r}")


def describe(error):
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    return {
        "type": type(error).__name__,
        "types": [cls.__name__ for cls in type(error).__mro__],
        "status": status,
        "message": str(error),
    }


def main():
    send({"ok": True, "result": {"version": huggingface_hub.__version__, "xet": is_xet_available()}})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            send({"ok": True, "result": run(request["op"], request.get("args", {}))})
        except Exception as error:  # every failure is data for the Rust test
            traceback.print_exc(file=sys.stderr)
            send({"ok": False, "error": describe(error)})


if __name__ == "__main__":
    main()
