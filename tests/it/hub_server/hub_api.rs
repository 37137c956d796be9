//! The Hub origin: the `/api/...` JSON routes, `resolve` file downloads and
//! the Git LFS batch and verify routes, for dataset repos, with the Hub's
//! auth rules and error headers.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use super::faults::FileFault;
use super::git;
use super::http::{self, Request, Response};
use super::patterns;
use super::server::{Access, Shared, State, lock};
use super::storage;
use super::store::{
    self, CommitError, CommitOp, NewCommit, Repo, Snapshot, StoredFile, Visibility,
};

/// Text files at least this large go to LFS, as on the Hub.
const LARGE_TEXT_BYTES: u64 = 10 * 1024 * 1024;

type Handled = Result<Response, Response>;

/// Answers a request to the Hub origin, or `None` when no route matches.
pub(super) fn handle(shared: &Shared, request: &Request) -> Option<Response> {
    let segments: Vec<&str> = request.path().split('/').skip(1).collect();
    let method = request.method.as_str();
    let result = match (method, segments.as_slice()) {
        ("POST", ["api", "repos", "create"]) => create_repo(shared, request),
        ("GET", ["api", "whoami-v2"]) => whoami(shared, request),
        ("POST", ["api", "validate-yaml"]) => Ok(Response::json(
            200,
            &json!({ "errors": [], "warnings": [] }),
        )),
        ("GET", ["api", "datasets", ns, name]) => repo_info(shared, request, ns, name, "main"),
        ("GET", ["api", "datasets", ns, name, "revision", rev]) => {
            decode(rev).and_then(|rev| repo_info(shared, request, ns, name, &rev))
        }
        ("GET", ["api", "datasets", ns, name, "tree", rev, rest @ ..]) => {
            tree(shared, request, ns, name, rev, &rest.join("/"))
        }
        ("GET", ["api", "datasets", ns, name, "commits", rev]) => {
            commits(shared, request, ns, name, rev)
        }
        ("POST", ["api", "datasets", ns, name, "paths-info", rev]) => {
            paths_info(shared, request, ns, name, rev)
        }
        ("POST", ["api", "datasets", ns, name, "preupload", rev]) => {
            preupload(shared, request, ns, name, rev)
        }
        ("POST", ["api", "datasets", ns, name, "commit", rev]) => {
            commit(shared, request, ns, name, rev)
        }
        ("GET" | "HEAD", ["datasets", ns, name, "resolve", rev, rest @ ..]) if !rest.is_empty() => {
            resolve(shared, request, ns, name, rev, &rest.join("/"))
        }
        ("POST", ["datasets", ns, git_name, "info", "lfs", "objects", "batch"]) => {
            match git_name.strip_suffix(".git") {
                Some(name) => lfs_batch(shared, request, ns, name),
                None => return None,
            }
        }
        ("POST", ["datasets", ns, git_name, "info", "lfs", "objects", "verify"]) => {
            match git_name.strip_suffix(".git") {
                Some(name) => lfs_verify(shared, request, ns, name),
                None => return None,
            }
        }
        _ => return None,
    };
    Some(result.unwrap_or_else(|error| error))
}

fn bad_request(message: &str) -> Response {
    Response::hub_error(400, Some("BadRequest"), message)
}

fn unsupported(what: &str) -> Response {
    bad_request(&format!("{what} is not implemented by the babel test Hub"))
}

fn decode(raw: &str) -> Result<String, Response> {
    http::percent_decode(raw).map_err(|why| bad_request(&why))
}

fn parse_json(request: &Request) -> Result<Value, Response> {
    serde_json::from_slice(&request.body)
        .map_err(|error| bad_request(&format!("request body is not valid JSON: {error}")))
}

fn is_true(value: Option<String>) -> bool {
    matches!(value.as_deref(), Some("true" | "1" | "True"))
}

/// Who is calling, from the `Authorization` header.
enum Caller {
    Anonymous,
    User { name: String, access: Access },
}

/// An `Authorization` header with an unknown token is refused outright, on
/// every route, with the message the official client special-cases.
fn identify(state: &State, request: &Request) -> Result<Caller, Response> {
    if request.header("authorization").is_none() {
        return Ok(Caller::Anonymous);
    }
    match request
        .bearer_token()
        .and_then(|token| state.tokens.get(token))
    {
        Some(grant) => Ok(Caller::User {
            name: grant.user.clone(),
            access: grant.access,
        }),
        None => Err(Response::hub_error(
            401,
            None,
            "Invalid credentials in Authorization header",
        )),
    }
}

fn repo_not_found(status: u16) -> Response {
    Response::hub_error(status, Some("RepoNotFound"), "Repository not found")
}

/// The repo, if the caller may read it. Like the Hub, a private repo looks
/// missing: 401 without a token, 404 with a token that has no access.
fn readable<'a>(
    state: &'a State,
    caller: &Caller,
    ns: &str,
    name: &str,
) -> Result<&'a Repo, Response> {
    let ns = decode(ns)?;
    let name = decode(name)?;
    let repo = state
        .store
        .repos
        .get(&format!("{ns}/{name}"))
        .ok_or_else(|| repo_not_found(404))?;
    match (repo.visibility, caller) {
        (Visibility::Public, _) => Ok(repo),
        (Visibility::Private, Caller::Anonymous) => Err(repo_not_found(401)),
        (Visibility::Private, Caller::User { name, .. })
            if state.is_member(name, &repo.namespace) =>
        {
            Ok(repo)
        }
        (Visibility::Private, Caller::User { .. }) => Err(repo_not_found(404)),
    }
}

fn require_write(state: &State, caller: &Caller, namespace: &str) -> Result<(), Response> {
    match caller {
        Caller::Anonymous => Err(Response::hub_error(
            401,
            None,
            "Authentication required: this operation needs a token with write access",
        )),
        Caller::User {
            access: Access::Read,
            ..
        } => Err(Response::hub_error(
            403,
            None,
            "This token has read access only; writing needs a write token",
        )),
        Caller::User { name, .. } if !state.is_member(name, namespace) => Err(Response::hub_error(
            403,
            None,
            &format!("You don't have the rights to write to the namespace {namespace}"),
        )),
        Caller::User { .. } => Ok(()),
    }
}

fn writable<'a>(
    state: &'a State,
    caller: &Caller,
    ns: &str,
    name: &str,
) -> Result<&'a Repo, Response> {
    let repo = readable(state, caller, ns, name)?;
    require_write(state, caller, &repo.namespace)?;
    Ok(repo)
}

fn revision_not_found(revision: &str) -> Response {
    Response::hub_error(
        404,
        Some("RevisionNotFound"),
        &format!("Invalid rev id: {revision}"),
    )
}

fn valid_repo_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 96
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !name.starts_with(['-', '.'])
        && !name.ends_with(['-', '.'])
        && !name.contains("--")
        && !name.contains("..")
}

fn create_repo(shared: &Shared, request: &Request) -> Handled {
    let body = parse_json(request)?;
    let mut state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let name = body
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad_request("missing \"name\""))?;
    if body.get("type").and_then(Value::as_str) != Some("dataset") {
        return Err(unsupported("a repo type other than \"dataset\""));
    }
    let namespace = match (body.get("organization"), &caller) {
        (Some(Value::String(org)), _) => org.clone(),
        (None | Some(Value::Null), Caller::User { name, .. }) => name.clone(),
        (None | Some(Value::Null), Caller::Anonymous) => String::new(),
        (Some(_), _) => return Err(bad_request("\"organization\" must be a string or null")),
    };
    require_write(&state, &caller, &namespace)?;
    if !valid_repo_name(name) {
        return Err(bad_request(&format!("invalid repo name {name:?}")));
    }
    let private = match (body.get("visibility"), body.get("private")) {
        (Some(Value::String(visibility)), _) => match visibility.as_str() {
            "private" => true,
            "public" => false,
            other => return Err(bad_request(&format!("unknown visibility {other:?}"))),
        },
        (None, Some(Value::Bool(private))) => *private,
        (None, None | Some(Value::Null)) => false,
        _ => return Err(bad_request("invalid \"visibility\"/\"private\"")),
    };
    let url = format!("{}/datasets/{namespace}/{name}", shared.urls.hub);
    let visibility = if private {
        Visibility::Private
    } else {
        Visibility::Public
    };
    match state.store.create_repo(&namespace, name, visibility) {
        Some(_) => Ok(Response::json(
            200,
            &json!({ "url": url, "name": format!("{namespace}/{name}") }),
        )),
        // The official client reads "url" from the 409 body when exist_ok=True.
        None => Ok(Response::json(
            409,
            &json!({ "error": "You already created this dataset repo", "url": url }),
        )
        .with_header("X-Error-Message", "You already created this dataset repo")),
    }
}

fn whoami(shared: &Shared, request: &Request) -> Handled {
    let state = lock(&shared.state);
    match identify(&state, request)? {
        Caller::Anonymous => Err(Response::hub_error(
            401,
            None,
            "Invalid credentials in Authorization header",
        )),
        Caller::User { name, access } => {
            let orgs: Vec<Value> = state
                .orgs
                .iter()
                .filter(|(_, members)| members.contains(&name))
                .map(|(org, _)| json!({ "name": org, "type": "org" }))
                .collect();
            let role = if access == Access::Write {
                "write"
            } else {
                "read"
            };
            Ok(Response::json(
                200,
                &json!({
                    "type": "user",
                    "name": name,
                    "orgs": orgs,
                    "auth": { "type": "access_token", "accessToken": { "role": role } },
                }),
            ))
        }
    }
}

fn file_entry(path: &str, file: &StoredFile) -> Value {
    let mut entry = json!({
        "type": "file",
        "oid": file.blob_id(),
        "size": file.size(),
        "path": path,
    });
    if let (Some(pointer), Some(object)) = (&file.lfs, entry.as_object_mut()) {
        object.insert(
            "lfs".to_owned(),
            json!({
                "oid": pointer.sha256,
                "size": pointer.size,
                "pointerSize": pointer.text().len(),
            }),
        );
    }
    entry
}

fn sibling(path: &str, file: &StoredFile, blobs: bool) -> Value {
    if !blobs {
        return json!({ "rfilename": path });
    }
    let mut entry = json!({ "rfilename": path, "size": file.size(), "blobId": file.blob_id() });
    if let (Some(pointer), Some(object)) = (&file.lfs, entry.as_object_mut()) {
        object.insert(
            "lfs".to_owned(),
            json!({
                "sha256": pointer.sha256,
                "size": pointer.size,
                "pointerSize": pointer.text().len(),
            }),
        );
    }
    entry
}

fn repo_info(shared: &Shared, request: &Request, ns: &str, name: &str, revision: &str) -> Handled {
    if request.query_param("expand").is_some() {
        return Err(unsupported("repo info with expand="));
    }
    let blobs = is_true(request.query_param("blobs"));
    let state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let repo = readable(&state, &caller, ns, name)?;
    let commit = repo
        .resolve(revision)
        .ok_or_else(|| revision_not_found(revision))?;
    let mut siblings: Vec<Value> = commit
        .files
        .iter()
        .map(|(path, file)| sibling(path, file, blobs))
        .collect();
    for extra in state.faults.extra_entries(&repo.id()) {
        siblings.push(sibling(&extra.path, &extra_file(extra), blobs));
    }
    let used_storage: u64 = commit.files.values().map(StoredFile::size).sum();
    Ok(Response::json(
        200,
        &json!({
            "_id": &git::sha256_hex(repo.id().as_bytes())[..24],
            "id": repo.id(),
            "author": repo.namespace,
            "sha": commit.info.id.as_str(),
            "lastModified": git::iso_time(commit.info.time),
            "createdAt": git::iso_time(repo.created),
            "private": repo.visibility == Visibility::Private,
            "gated": false,
            "disabled": false,
            "tags": [],
            "downloads": 0,
            "likes": 0,
            "siblings": siblings,
            "usedStorage": used_storage,
        }),
    ))
}

fn extra_file(extra: &super::faults::ExtraEntry) -> StoredFile {
    StoredFile::regular(Arc::clone(&extra.bytes))
}

/// The entries under `prefix` (`""` for the root): every file and directory
/// below it when `recursive`, its direct children otherwise. Sorted by path.
/// `None` when `prefix` is not a directory of the snapshot.
fn list_entries(files: &Snapshot, prefix: &str, recursive: bool) -> Option<Vec<Value>> {
    let blobs: BTreeMap<String, String> = files
        .iter()
        .map(|(path, file)| (path.clone(), file.blob_id()))
        .collect();
    let trees = git::tree_ids(&blobs);
    if !prefix.is_empty() && !trees.contains_key(prefix) {
        return None;
    }
    let under = |path: &str| -> Option<usize> {
        // Depth below the prefix: 1 for a direct child.
        let relative = if prefix.is_empty() {
            path
        } else {
            path.strip_prefix(prefix)?.strip_prefix('/')?
        };
        Some(relative.split('/').count())
    };
    let wanted = |depth: usize| recursive || depth == 1;
    let mut entries: BTreeMap<&str, Value> = BTreeMap::new();
    for (path, tree) in &trees {
        if path.is_empty() {
            continue;
        }
        if under(path).is_some_and(wanted) {
            entries.insert(
                path,
                json!({ "type": "directory", "oid": tree, "size": 0, "path": path }),
            );
        }
    }
    for (path, file) in files {
        if under(path).is_some_and(wanted) {
            entries.insert(path, file_entry(path, file));
        }
    }
    Some(entries.into_values().collect())
}

fn encode_cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("babel-offset:{offset}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    String::from_utf8(bytes)
        .ok()?
        .strip_prefix("babel-offset:")?
        .parse()
        .ok()
}

fn tree(
    shared: &Shared,
    request: &Request,
    ns: &str,
    name: &str,
    rev: &str,
    raw_path: &str,
) -> Handled {
    let revision = decode(rev)?;
    // The client sends the path with `quote(path, safe="")`, so `/` arrives as %2F.
    let prefix = decode(raw_path)?;
    let prefix = prefix.trim_end_matches('/');
    let recursive = is_true(request.query_param("recursive"));
    if is_true(request.query_param("expand")) {
        return Err(unsupported("tree listing with expand=true"));
    }
    let offset = match request.query_param("cursor") {
        None => 0,
        Some(cursor) => decode_cursor(&cursor).ok_or_else(|| bad_request("invalid cursor"))?,
    };
    let state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let repo = readable(&state, &caller, ns, name)?;
    let commit = repo
        .resolve(&revision)
        .ok_or_else(|| revision_not_found(&revision))?;
    let mut entries = list_entries(&commit.files, prefix, recursive).ok_or_else(|| {
        Response::hub_error(
            404,
            Some("EntryNotFound"),
            &format!("{prefix} does not exist on \"{revision}\""),
        )
    })?;
    if prefix.is_empty() {
        for extra in state.faults.extra_entries(&repo.id()) {
            entries.push(file_entry(&extra.path, &extra_file(extra)));
        }
    }
    let page_size = state.config.tree_page_size.max(1);
    let end = offset.saturating_add(page_size).min(entries.len());
    let page: Vec<Value> = entries.get(offset..end).unwrap_or(&[]).to_vec();
    let mut response = Response::json(200, &Value::Array(page));
    if end < entries.len() {
        let kept: Vec<&str> = request
            .query()
            .unwrap_or("")
            .split('&')
            .filter(|pair| !pair.is_empty() && !pair.starts_with("cursor="))
            .collect();
        let mut query = kept.join("&");
        if !query.is_empty() {
            query.push('&');
        }
        let next = format!(
            "{}{}?{query}cursor={}",
            shared.urls.hub,
            request.path(),
            encode_cursor(end)
        );
        response = response.with_header("Link", &format!("<{next}>; rel=\"next\""));
    }
    Ok(response)
}

/// The history that ends at `rev`, newest first (`HfApi.list_repo_commits`): each commit's
/// id, authors, date, title (the summary) and message (the description), in pages whose
/// next one the `Link` header names, as the Hub pages them.
fn commits(shared: &Shared, request: &Request, ns: &str, name: &str, rev: &str) -> Handled {
    let revision = decode(rev)?;
    if request.query_param("expand[]").is_some() {
        return Err(unsupported("commit listing with expand[]="));
    }
    let offset = match request.query_param("cursor") {
        None => 0,
        Some(cursor) => decode_cursor(&cursor).ok_or_else(|| bad_request("invalid cursor"))?,
    };
    let state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let repo = readable(&state, &caller, ns, name)?;
    let mut at = repo.resolve(&revision).map(|commit| &commit.info);
    let mut history = Vec::new();
    while let Some(info) = at {
        let author = if info.parent.is_none() {
            "system"
        } else {
            "tester"
        };
        history.push(json!({
            "id": info.id.as_str(),
            "authors": [{"user": author}],
            "date": git::iso_time(info.time),
            "title": info.summary,
            "message": info.description,
        }));
        at = info
            .parent
            .as_ref()
            .and_then(|parent| repo.commit(parent))
            .map(|commit| &commit.info);
    }
    if history.is_empty() {
        return Err(revision_not_found(&revision));
    }
    let page_size = state.config.tree_page_size.max(1);
    let end = offset.saturating_add(page_size).min(history.len());
    let page: Vec<Value> = history.get(offset..end).unwrap_or(&[]).to_vec();
    let mut response = Response::json(200, &Value::Array(page));
    if end < history.len() {
        let next = format!(
            "{}{}?cursor={}",
            shared.urls.hub,
            request.path(),
            encode_cursor(end)
        );
        response = response.with_header("Link", &format!("<{next}>; rel=\"next\""));
    }
    Ok(response)
}

fn paths_info(shared: &Shared, request: &Request, ns: &str, name: &str, rev: &str) -> Handled {
    let revision = decode(rev)?;
    let is_json = request
        .header("content-type")
        .is_some_and(|value| value.starts_with("application/json"));
    let (paths, expand) = if is_json {
        let body = parse_json(request)?;
        let paths = body
            .get("paths")
            .and_then(Value::as_array)
            .ok_or_else(|| bad_request("missing \"paths\""))?
            .iter()
            .map(|path| path.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| bad_request("\"paths\" must be strings"))?;
        (paths, body.get("expand") == Some(&Value::Bool(true)))
    } else {
        let text = String::from_utf8(request.body.clone())
            .map_err(|_| bad_request("form body is not UTF-8"))?;
        let form = http::parse_form(&text).map_err(|why| bad_request(&why))?;
        let paths = form
            .iter()
            .filter(|(key, _)| key == "paths")
            .map(|(_, value)| value.clone())
            .collect();
        let expand = form
            .iter()
            .any(|(key, value)| key == "expand" && matches!(value.as_str(), "true" | "True" | "1"));
        (paths, expand)
    };
    if expand {
        return Err(unsupported("paths-info with expand=true"));
    }
    let state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let repo = readable(&state, &caller, ns, name)?;
    let commit = repo
        .resolve(&revision)
        .ok_or_else(|| revision_not_found(&revision))?;
    let everything = list_entries(&commit.files, "", true).unwrap_or_default();
    let found: Vec<Value> = paths
        .iter()
        .filter_map(|wanted| {
            let wanted = wanted.trim_end_matches('/');
            everything
                .iter()
                .find(|entry| entry.get("path").and_then(Value::as_str) == Some(wanted))
                .cloned()
        })
        .collect();
    Ok(Response::json(200, &Value::Array(found)))
}

/// The Hub's choice between regular git storage and LFS, from the file's
/// size, the first 512 bytes and `.gitattributes` at the revision.
fn upload_mode(
    state: &State,
    gitattributes: &str,
    path: &str,
    size: u64,
    sample: &[u8],
) -> &'static str {
    let lfs = size > 0
        && (patterns::is_lfs_tracked(gitattributes, path)
            || state
                .config
                .lfs_threshold
                .is_some_and(|threshold| size >= threshold)
            || looks_binary(sample, size)
            || size >= LARGE_TEXT_BYTES);
    if lfs { "lfs" } else { "regular" }
}

/// Binary means a NUL byte or invalid UTF-8 in the sample (a character cut
/// by the 512-byte sample boundary does not count).
fn looks_binary(sample: &[u8], size: u64) -> bool {
    if sample.contains(&0) {
        return true;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => false,
        Err(error) => !((sample.len() as u64) < size && error.error_len().is_none()),
    }
}

fn preupload(shared: &Shared, request: &Request, ns: &str, name: &str, rev: &str) -> Handled {
    let revision = decode(rev)?;
    if request.query_param("create_pr").is_some() {
        return Err(unsupported("create_pr"));
    }
    let body = parse_json(request)?;
    let state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let repo = writable(&state, &caller, ns, name)?;
    let commit = repo
        .resolve(&revision)
        .ok_or_else(|| revision_not_found(&revision))?;
    let text_of = |path: &str| {
        commit
            .files
            .get(path)
            .map(|file| String::from_utf8_lossy(file.bytes()).into_owned())
    };
    let gitattributes = text_of(".gitattributes").unwrap_or_default();
    let gitignore = match body.get("gitIgnore") {
        Some(Value::String(text)) => Some(text.clone()),
        _ => text_of(".gitignore"),
    };
    let files = body
        .get("files")
        .and_then(Value::as_array)
        .ok_or_else(|| bad_request("missing \"files\" array"))?;
    let mut answers = Vec::new();
    for file in files {
        let path = file
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| bad_request("file without \"path\""))?;
        store::check_repo_path(path).map_err(|error| bad_request(&error.to_string()))?;
        let size = file
            .get("size")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad_request(&format!("{path}: missing integer \"size\"")))?;
        let sample = STANDARD
            .decode(file.get("sample").and_then(Value::as_str).unwrap_or(""))
            .map_err(|_| bad_request(&format!("{path}: \"sample\" is not base64")))?;
        let mode = upload_mode(&state, &gitattributes, path, size, &sample);
        let should_ignore = gitignore
            .as_deref()
            .is_some_and(|gitignore| patterns::is_ignored(gitignore, path));
        let oid = commit
            .files
            .get(path)
            .map(|remote| match (&remote.lfs, mode) {
                (Some(pointer), "lfs") => pointer.sha256.clone(),
                _ => remote.blob_id(),
            });
        answers.push(json!({
            "path": path,
            "uploadMode": mode,
            "shouldIgnore": should_ignore,
            "oid": oid,
        }));
    }
    Ok(Response::json(
        200,
        &json!({ "files": answers, "commitOid": commit.info.id.as_str() }),
    ))
}

fn string_field<'a>(value: &'a Value, key: &str, line: usize) -> Result<&'a str, Response> {
    value
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| bad_request(&format!("commit line {line}: missing string \"{key}\"")))
}

/// Parses the NDJSON commit body into a `NewCommit`, looking `lfsFile`
/// objects up in the repo's LFS store.
fn parse_commit(repo: &Repo, branch: &str, body: &[u8]) -> Result<NewCommit, Response> {
    let text = std::str::from_utf8(body).map_err(|_| bad_request("commit body is not UTF-8"))?;
    let mut commit = NewCommit {
        branch: branch.to_owned(),
        summary: String::new(),
        description: String::new(),
        parent: None,
        ops: Vec::new(),
    };
    let mut saw_header = false;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let item: Value = serde_json::from_str(line)
            .map_err(|error| bad_request(&format!("commit line {number}: {error}")))?;
        let key = string_field(&item, "key", number)?;
        let value = item
            .get("value")
            .filter(|value| value.is_object())
            .ok_or_else(|| {
                bad_request(&format!("commit line {number}: missing object \"value\""))
            })?;
        if key != "header" && !saw_header {
            return Err(bad_request("the first commit line must be the header"));
        }
        if value.get("oldPath").is_some() {
            return Err(unsupported("oldPath (copy/rename) in a commit"));
        }
        match key {
            "header" if saw_header => return Err(bad_request("two commit headers")),
            "header" => {
                saw_header = true;
                commit.summary = string_field(value, "summary", number)?.to_owned();
                commit.description = value
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                if let Some(parent) = value.get("parentCommit").filter(|parent| !parent.is_null()) {
                    let parent = parent.as_str().unwrap_or("");
                    let valid = (5..=40).contains(&parent.len())
                        && parent.bytes().all(|b| b.is_ascii_hexdigit());
                    if !valid {
                        return Err(bad_request(&format!("invalid parentCommit {parent:?}")));
                    }
                    commit.parent = Some(parent.to_owned());
                }
            }
            "file" => {
                let path = string_field(value, "path", number)?;
                let content = string_field(value, "content", number)?;
                let bytes = match value.get("encoding").and_then(Value::as_str) {
                    Some("base64") => STANDARD
                        .decode(content)
                        .map_err(|_| bad_request(&format!("{path}: content is not base64")))?,
                    Some("utf-8") => content.as_bytes().to_vec(),
                    other => {
                        return Err(bad_request(&format!("{path}: unknown encoding {other:?}")));
                    }
                };
                commit.ops.push(CommitOp::Put {
                    path: path.to_owned(),
                    bytes: Arc::new(bytes),
                    lfs: false,
                });
            }
            "lfsFile" => {
                let path = string_field(value, "path", number)?;
                if value.get("algo").and_then(Value::as_str) != Some("sha256") {
                    return Err(bad_request(&format!("{path}: lfsFile algo must be sha256")));
                }
                let oid = string_field(value, "oid", number)?;
                let bytes = repo.lfs_objects.get(oid).ok_or_else(|| {
                    bad_request(&format!(
                        "{path}: LFS object {oid} was never uploaded to this repo"
                    ))
                })?;
                if let Some(size) = value.get("size").and_then(Value::as_u64)
                    && size != bytes.len() as u64
                {
                    return Err(bad_request(&format!(
                        "{path}: lfsFile size {size} but object {oid} has {} bytes",
                        bytes.len()
                    )));
                }
                commit.ops.push(CommitOp::Put {
                    path: path.to_owned(),
                    bytes: Arc::clone(bytes),
                    lfs: true,
                });
            }
            "deletedFile" => commit.ops.push(CommitOp::Delete {
                path: string_field(value, "path", number)?.to_owned(),
            }),
            "deletedFolder" => commit.ops.push(CommitOp::DeleteFolder {
                path: string_field(value, "path", number)?.to_owned(),
            }),
            other => return Err(bad_request(&format!("unknown commit key {other:?}"))),
        }
    }
    if !saw_header {
        return Err(bad_request("commit without a header line"));
    }
    Ok(commit)
}

pub(super) fn commit_error_response(error: &CommitError) -> Response {
    let message = error.to_string();
    match error {
        CommitError::RepoNotFound(_) => repo_not_found(404),
        CommitError::BranchNotFound(_) => {
            Response::hub_error(404, Some("RevisionNotFound"), &message)
        }
        CommitError::StaleParent { .. } => Response::hub_error(412, None, &message),
        CommitError::InvalidPath(_) => bad_request(&message),
        CommitError::FileNotFound(_) | CommitError::FolderNotFound(_) => {
            Response::hub_error(404, Some("EntryNotFound"), &message)
        }
    }
}

fn commit(shared: &Shared, request: &Request, ns: &str, name: &str, rev: &str) -> Handled {
    let branch = decode(rev)?;
    if request.query_param("create_pr").is_some() {
        return Err(unsupported("create_pr"));
    }
    let ndjson = request
        .header("content-type")
        .is_some_and(|value| value.starts_with("application/x-ndjson"));
    let mut state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let repo = writable(&state, &caller, ns, name)?;
    if !ndjson {
        return Err(bad_request(
            "the commit body must be Content-Type: application/x-ndjson",
        ));
    }
    let new_commit = parse_commit(repo, &branch, &request.body)?;
    let repo_id = repo.id();
    let id = state
        .store
        .apply_commit(&repo_id, new_commit)
        .map_err(|error| commit_error_response(&error))?;
    Ok(Response::json(
        200,
        &json!({
            "success": true,
            "commitOid": id.as_str(),
            "commitUrl": format!("{}/datasets/{repo_id}/commit/{id}", shared.urls.hub),
            "hookOutput": "",
            "pullRequestUrl": Value::Null,
        }),
    ))
}

fn resolve(
    shared: &Shared,
    request: &Request,
    ns: &str,
    name: &str,
    rev: &str,
    raw_path: &str,
) -> Handled {
    let revision = decode(rev)?;
    let path = decode(raw_path)?;
    let mut state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let repo = readable(&state, &caller, ns, name)?;
    let repo_id = repo.id();
    let commit = repo
        .resolve(&revision)
        .ok_or_else(|| revision_not_found(&revision))?;
    let commit_id = commit.info.id.clone();
    let extra = state
        .faults
        .extra_entries(&repo_id)
        .iter()
        .find(|extra| extra.path == path)
        .map(extra_file);
    let Some(file) = commit.files.get(&path).cloned().or(extra) else {
        return Err(Response::hub_error(
            404,
            Some("EntryNotFound"),
            &format!("{path} does not exist on \"{revision}\""),
        )
        .with_header("X-Repo-Commit", commit_id.as_str()));
    };
    let etag = format!("\"{}\"", file.blob_id());
    match state.faults.redirect(&repo_id, &path) {
        Some(FileFault::RedirectLoop) => {
            let hop: u64 = request
                .query_param("hop")
                .and_then(|hop| hop.parse().ok())
                .unwrap_or(0);
            let location = format!("{}{}?hop={}", shared.urls.hub, request.path(), hop + 1);
            return Ok(redirect(&location, &commit_id.to_string()));
        }
        Some(FileFault::RedirectToForeign) => {
            let location =
                storage::foreign_url(&shared.urls.foreign, &repo_id, commit_id.as_str(), &path);
            let linked = file
                .lfs
                .as_ref()
                .map_or_else(|| file.blob_id(), |pointer| pointer.sha256.clone());
            return Ok(redirect(&location, commit_id.as_str())
                .with_header("ETag", &etag)
                .with_header("X-Linked-Etag", &format!("\"{linked}\""))
                .with_header("X-Linked-Size", &file.size().to_string()));
        }
        _ => {}
    }
    if let Some(pointer) = &file.lfs {
        let location = storage::signed_download_url(
            &shared.urls.cdn,
            state.url_secret,
            &repo_id,
            &pointer.sha256,
            &path,
        );
        return Ok(redirect(&location, commit_id.as_str())
            .with_header("ETag", &etag)
            .with_header("X-Linked-Etag", &format!("\"{}\"", pointer.sha256))
            .with_header("X-Linked-Size", &pointer.size.to_string()));
    }
    let fault = if request.method == "GET" {
        state.faults.take_body_fault(&repo_id, &path)
    } else {
        None
    };
    let headers = Response::new(200)
        .with_header("ETag", &etag)
        .with_header("X-Repo-Commit", commit_id.as_str())
        .with_header("Content-Type", "application/octet-stream");
    Ok(storage::serve_content(
        request,
        &file.shared_bytes(),
        fault,
        headers,
    ))
}

fn redirect(location: &str, commit: &str) -> Response {
    Response::new(302)
        .with_header("Location", location)
        .with_header("X-Repo-Commit", commit)
        .with_header("Content-Type", "text/plain; charset=utf-8")
        .with_body(format!("Found. Redirecting to {location}").into_bytes())
}

fn lfs_json(status: u16, value: &Value) -> Response {
    let mut response = Response::json(status, value);
    for (name, header) in &mut response.headers {
        if name.eq_ignore_ascii_case("content-type") {
            *header = "application/vnd.git-lfs+json".to_owned();
        }
    }
    response
}

fn lfs_batch(shared: &Shared, request: &Request, ns: &str, name: &str) -> Handled {
    let body = parse_json(request)?;
    let state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let operation = body.get("operation").and_then(Value::as_str).unwrap_or("");
    let repo = match operation {
        "upload" => writable(&state, &caller, ns, name)?,
        "download" => readable(&state, &caller, ns, name)?,
        other => return Err(bad_request(&format!("unknown LFS operation {other:?}"))),
    };
    if let Some(transfers) = body.get("transfers").and_then(Value::as_array)
        && !transfers.iter().any(|transfer| transfer == "basic")
    {
        return Err(Response::hub_error(
            422,
            None,
            "only the basic LFS transfer is implemented",
        ));
    }
    if body
        .get("hash_algo")
        .and_then(Value::as_str)
        .is_some_and(|algo| algo != "sha256")
    {
        return Err(Response::hub_error(
            422,
            None,
            "only sha256 LFS objects are supported",
        ));
    }
    let objects = body
        .get("objects")
        .and_then(Value::as_array)
        .ok_or_else(|| bad_request("missing \"objects\" array"))?;
    let repo_id = repo.id();
    let verify_href = format!(
        "{}/datasets/{repo_id}.git/info/lfs/objects/verify",
        shared.urls.hub
    );
    let mut answers = Vec::new();
    for object in objects {
        let oid = object.get("oid").and_then(Value::as_str).unwrap_or("");
        let Some(size) = object.get("size").and_then(Value::as_u64) else {
            return Err(bad_request("LFS object without integer \"size\""));
        };
        let error = |code: u16, message: &str| json!({ "oid": oid, "size": size, "error": { "code": code, "message": message } });
        if !git::is_hex(oid, 64) {
            answers.push(error(422, "oid must be 64 lowercase hex digits"));
            continue;
        }
        let stored = repo.lfs_objects.get(oid);
        let answer = match (operation, stored) {
            ("upload", Some(bytes)) if bytes.len() as u64 == size => {
                json!({ "oid": oid, "size": size, "authenticated": true })
            }
            ("upload", Some(_)) => error(422, "size does not match the stored object"),
            ("upload", None) => json!({
                "oid": oid,
                "size": size,
                "authenticated": true,
                "actions": {
                    "upload": {
                        "href": storage::signed_upload_url(&shared.urls.cdn, state.url_secret, &repo_id, oid, size),
                        "header": {},
                        "expires_in": 900,
                    },
                    "verify": { "href": verify_href, "header": {}, "expires_in": 900 },
                },
            }),
            (_, Some(_)) => json!({
                "oid": oid,
                "size": size,
                "authenticated": true,
                "actions": {
                    "download": {
                        "href": storage::signed_download_url(&shared.urls.cdn, state.url_secret, &repo_id, oid, oid),
                        "header": {},
                        "expires_in": 3600,
                    },
                },
            }),
            (_, None) => error(404, "Object does not exist"),
        };
        answers.push(answer);
    }
    Ok(lfs_json(
        200,
        &json!({ "transfer": "basic", "objects": answers, "hash_algo": "sha256" }),
    ))
}

fn lfs_verify(shared: &Shared, request: &Request, ns: &str, name: &str) -> Handled {
    let body = parse_json(request)?;
    let state = lock(&shared.state);
    let caller = identify(&state, request)?;
    let repo = writable(&state, &caller, ns, name)?;
    let oid = body.get("oid").and_then(Value::as_str).unwrap_or("");
    let size = body.get("size").and_then(Value::as_u64);
    match repo.lfs_objects.get(oid) {
        Some(bytes) if Some(bytes.len() as u64) == size => {
            Ok(lfs_json(200, &json!({ "success": true })))
        }
        Some(_) => Err(Response::hub_error(
            422,
            None,
            "size does not match the stored object",
        )),
        None => Err(Response::hub_error(404, None, "Object not found")),
    }
}
