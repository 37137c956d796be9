//! The integration tests, one binary (linking 20 test binaries dominated CI time): each
//! module is one capability, run against the real `babel` binary in a temporary archive.
//! Shared helpers: `common` (the environment), `hub_server` (a local Hub test server the
//! official client validates) and `hub_support` (Hub test archives and commands).

mod common;
mod hub_server;
mod hub_support;

mod artifacts;
mod bench_smoke;
mod benchmark_workflow;
mod bundle;
mod cli_outputs;
mod cli_robustness;
mod compare;
mod crash_recovery;
mod demo;
mod dependency_rule;
mod exit_codes;
mod export_eee;
mod full_disk;
mod golden_archive;
mod harness_import;
mod history;
mod hub_pull;
mod hub_push;
mod hub_server_fidelity;
mod import_canonical;
mod import_eee;
mod import_helm;
mod import_inspect;
mod import_lighteval;
mod import_opencompass;
mod paired_import;
mod panel;
mod panel_browser;
mod properties;
mod readme;
mod records_readers;
mod reliability;
mod report_browser;
mod report_golden;
mod runs_and_lock;
mod streaming_memory;
mod strict_manifests;
mod validate_tamper;
