//! The storage origins: the CDN (presigned LFS uploads and downloads, as on
//! S3) and the foreign origin hostile redirects point at. Also the one
//! function that serves file bytes, with ranges and body faults, for every
//! origin.

use std::sync::Arc;

use super::faults::{BodyFault, LengthHeader};
use super::git;
use super::http::{self, ByteRange, Delivery, Request, Response};
use super::server::{Shared, lock};

/// A signature over the parts of a storage URL, keyed by the server secret.
fn sign(secret: u64, parts: &[&str]) -> String {
    let text = format!("{secret}|{}", parts.join("|"));
    git::sha256_hex(text.as_bytes())[..32].to_owned()
}

/// Where an LFS object of `repo` is PUT: presigned, so no token is needed.
pub(super) fn signed_upload_url(
    cdn: &str,
    secret: u64,
    repo: &str,
    oid: &str,
    size: u64,
) -> String {
    let size = size.to_string();
    let signature = sign(secret, &["upload", repo, oid, &size]);
    format!(
        "{cdn}/upload/{}/{oid}?size={size}&X-Amz-Expires=900&X-Amz-Signature={signature}",
        http::encode_path(repo)
    )
}

/// Where an LFS object is downloaded from; `path` is the repo file it backs
/// (per-file faults are looked up by it).
pub(super) fn signed_download_url(
    cdn: &str,
    secret: u64,
    repo: &str,
    oid: &str,
    path: &str,
) -> String {
    let signature = sign(secret, &["download", repo, oid, path]);
    format!(
        "{cdn}/repos/{}/{oid}?filename={}&X-Amz-Expires=3600&X-Amz-Signature={signature}",
        http::encode_path(repo),
        http::encode_component(path)
    )
}

/// Where `RedirectToForeign` sends a client for a file at a commit.
pub(super) fn foreign_url(foreign: &str, repo: &str, commit: &str, path: &str) -> String {
    format!(
        "{foreign}/files/{}/{commit}/{}",
        http::encode_path(repo),
        http::encode_path(path)
    )
}

fn s3_error(status: u16, code: &str, message: &str) -> Response {
    Response::new(status)
        .with_header("Content-Type", "application/xml")
        .with_body(
            format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>")
                .into_bytes(),
        )
}

/// Serves `content` for a GET or HEAD: honours a single `Range`, and for a
/// GET applies `fault`. `base` carries the status-independent headers.
pub(super) fn serve_content(
    request: &Request,
    content: &Arc<Vec<u8>>,
    fault: Option<BodyFault>,
    base: Response,
) -> Response {
    let honest_len = content.len();
    let mut delivery = Delivery::Normal;
    let mut declared_len = None;
    let body: Vec<u8> = match fault {
        None => content.to_vec(),
        Some(BodyFault::WrongBytes(bytes)) => bytes,
        Some(BodyFault::ExtraBytes { extra, length }) => {
            match length {
                LengthHeader::Actual => {}
                LengthHeader::Original => declared_len = Some(honest_len),
                LengthHeader::Omitted => delivery = Delivery::Chunked,
            }
            let mut body = content.to_vec();
            body.extend_from_slice(&extra);
            body
        }
        Some(BodyFault::DropAfter(after)) => {
            delivery = Delivery::DropAfter(after);
            content.to_vec()
        }
        Some(BodyFault::Slow { chunk, delay }) => {
            delivery = Delivery::Throttled { chunk, delay };
            content.to_vec()
        }
    };
    let total = body.len();
    let mut response = base.with_header("Accept-Ranges", "bytes");
    match http::byte_range(request.header("range"), total) {
        ByteRange::Full => {
            response.body = body;
        }
        ByteRange::Part { start, end } => {
            response.status = 206;
            response = response.with_header(
                "Content-Range",
                &format!("bytes {start}-{}/{total}", end - 1),
            );
            declared_len = declared_len.map(|declared| declared.min(end).saturating_sub(start));
            response.body = body.get(start..end).unwrap_or_default().to_vec();
        }
        ByteRange::Unsatisfiable => {
            return Response::new(416)
                .with_header("Content-Range", &format!("bytes */{total}"))
                .with_header("Accept-Ranges", "bytes");
        }
    }
    if let Some(declared) = declared_len {
        delivery = Delivery::DeclaredLength(declared as u64);
    }
    response.with_delivery(delivery)
}

/// Answers a request to the CDN origin, or `None` when no route matches.
pub(super) fn handle_cdn(shared: &Shared, request: &Request) -> Option<Response> {
    let segments: Vec<&str> = request.path().split('/').skip(1).collect();
    let (kind, ns, name, oid) = match segments.as_slice() {
        [kind @ ("upload" | "repos"), ns, name, oid] => (*kind, *ns, *name, *oid),
        _ => return None,
    };
    let method = request.method.as_str();
    if !matches!(
        (kind, method),
        ("upload", "PUT") | ("repos", "GET" | "HEAD")
    ) {
        return None;
    }
    let (Ok(ns), Ok(name)) = (http::percent_decode(ns), http::percent_decode(name)) else {
        return Some(s3_error(400, "InvalidURI", "bad percent escape"));
    };
    let repo_id = format!("{ns}/{name}");
    let mut state = lock(&shared.state);
    // A presigned URL is its own credential: S3 refuses a second one.
    if state.config.cdn_rejects_authorization && request.header("authorization").is_some() {
        return Some(s3_error(
            400,
            "InvalidArgument",
            "Only one auth mechanism allowed; a presigned URL must not carry an Authorization header",
        ));
    }
    let signature = request.query_param("X-Amz-Signature").unwrap_or_default();
    if kind == "upload" {
        let size = request.query_param("size").unwrap_or_default();
        if signature != sign(state.url_secret, &["upload", &repo_id, oid, &size]) {
            return Some(s3_error(
                403,
                "SignatureDoesNotMatch",
                "bad or expired upload URL",
            ));
        }
        if request.body.len().to_string() != size || git::sha256_hex(&request.body) != oid {
            return Some(s3_error(
                400,
                "BadDigest",
                "the body does not match the object id and size",
            ));
        }
        let Some(repo) = state.store.repos.get_mut(&repo_id) else {
            return Some(s3_error(404, "NoSuchBucket", "no such repository"));
        };
        repo.lfs_objects
            .insert(oid.to_owned(), Arc::new(request.body.clone()));
        return Some(Response::new(200).with_header("ETag", &format!("\"{oid}\"")));
    }
    let path = request.query_param("filename").unwrap_or_default();
    if signature != sign(state.url_secret, &["download", &repo_id, oid, &path]) {
        return Some(s3_error(
            403,
            "AccessDenied",
            "Request has expired or the signature is invalid",
        ));
    }
    let Some(content) = state
        .store
        .repos
        .get(&repo_id)
        .and_then(|repo| repo.lfs_objects.get(oid))
        .cloned()
    else {
        return Some(s3_error(
            404,
            "NoSuchKey",
            "The specified key does not exist.",
        ));
    };
    let fault = if method == "GET" {
        state.faults.take_body_fault(&repo_id, &path)
    } else {
        None
    };
    drop(state);
    let file_name = path.rsplit('/').next().unwrap_or("");
    let base = Response::new(200)
        .with_header("Content-Type", "application/octet-stream")
        .with_header("ETag", &format!("\"{oid}\""))
        .with_header(
            "Content-Disposition",
            &format!(
                "attachment; filename=\"{}\"",
                http::header_safe(file_name).replace('"', "")
            ),
        );
    Some(serve_content(request, &content, fault, base))
}

/// Answers a request to the foreign origin: the true bytes of a file at a
/// commit, to anyone, never refusing a token (it only gets logged).
pub(super) fn handle_foreign(shared: &Shared, request: &Request) -> Option<Response> {
    if !matches!(request.method.as_str(), "GET" | "HEAD") {
        return None;
    }
    let segments: Vec<&str> = request.path().split('/').skip(1).collect();
    let ["files", ns, name, commit, rest @ ..] = segments.as_slice() else {
        return None;
    };
    let decoded = (
        http::percent_decode(ns),
        http::percent_decode(name),
        http::percent_decode(&rest.join("/")),
    );
    let (Ok(ns), Ok(name), Ok(path)) = decoded else {
        return Some(Response::new(400));
    };
    let state = lock(&shared.state);
    let file = state
        .store
        .repos
        .get(&format!("{ns}/{name}"))
        .and_then(|repo| repo.resolve(commit))
        .and_then(|commit| commit.files.get(&path))
        .cloned();
    drop(state);
    Some(match file {
        Some(file) => serve_content(
            request,
            &file.shared_bytes(),
            None,
            Response::new(200).with_header("Content-Type", "application/octet-stream"),
        ),
        None => Response::new(404),
    })
}
