//! Keys and stacked definitions from the command line, the environment and the
//! definition's directory.

use super::args::ProtocolArgs;
use super::{Result, load_program};
use crate::cli::Error;
use gpcap::decrypt::keys::{self, Secrets};
use gpcap::dissect::Program;
use gpcap::layers::Stack;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The stack the flags describe: keys for an encrypted outermost definition, and the
/// definitions inside it (further `-d`, and those `dissect-as` names found beside it).
pub fn stack(a: &ProtocolArgs, outer: Option<Arc<Program>>) -> Result<Option<Arc<Stack>>> {
    let (Some(first), Some(outer)) = (a.dissector.first(), outer) else {
        if a.key.is_some() || a.keylog.is_some() {
            return Err(Error::Usage(
                "--key and --keylog need a definition (-d) that declares encryption".into(),
            ));
        }
        return Ok(None);
    };
    let mut layers: Vec<Arc<Program>> = a.dissector[1..]
        .iter()
        .map(|d| load_program(d))
        .collect::<Result<_>>()?;
    // Names `dissect-as` gives that no -d brought: NAME.kdl beside the outer definition.
    let dir = first.parent().unwrap_or(Path::new("."));
    let mut i = 0;
    let mut wanted: Vec<String> = names(&outer);
    while i < wanted.len() && layers.len() < 16 {
        let name = wanted[i].clone();
        i += 1;
        if layers.iter().any(|l| l.params.name == name) || outer.params.name == name {
            continue;
        }
        let path = dir.join(format!("{name}.kdl"));
        if !path.exists() {
            eprintln!(
                "gpcap: {}: a field is dissected as `{name}`, but no -d definition is named so and {} does not exist: its bytes are not dissected",
                first.display(),
                path.display()
            );
            continue;
        }
        let p = load_program(&path)?;
        wanted.extend(names(&p));
        layers.push(p);
    }
    let secrets = secrets(a, first, &outer)?;
    if secrets.is_some() && outer.params.encryption.is_none() {
        return Err(Error::Usage(format!(
            "--key/--keylog: {} declares no encryption (`encryption \"netcode-1.02\"` in its protocol block)",
            first.display()
        )));
    }
    let stack = Stack {
        secrets: secrets.map(Arc::new),
        show_keys: a.show_keys,
        layers,
    };
    Ok(stack.active().then(|| Arc::new(stack)))
}

/// Layers a definition's fields are dissected as (its plaintext view's too).
fn names(p: &Program) -> Vec<String> {
    let view = p.params.plaintext.as_deref();
    p.params
        .dissect_as
        .iter()
        .chain(view.iter().flat_map(|v| &v.params.dissect_as))
        .map(|(_, n)| n.clone())
        .collect()
}

/// Keys from the flags, else the environment, else files beside the definition named
/// after the protocol (`netcode.key`, `netcode.keylog`).
fn secrets(a: &ProtocolArgs, def: &Path, outer: &Program) -> Result<Option<Secrets>> {
    let mut s = Secrets::default();
    let env_key = std::env::var("GPCAP_KEY").ok().filter(|v| !v.is_empty());
    let env_log = std::env::var_os("GPCAP_KEYLOG")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let dir = def.parent().unwrap_or(Path::new("."));
    let encrypted = outer.params.encryption.is_some();
    let beside = |ext: &str| {
        let p = dir.join(format!("{}.{ext}", outer.params.name));
        (encrypted && p.is_file()).then_some(p)
    };
    let key = match (&a.key, env_key) {
        (Some(k), _) => Some(keys::private_key(k, "--key")),
        (None, Some(k)) => Some(keys::private_key(&k, "GPCAP_KEY")),
        (None, None) => beside("key").map(|p| keys::key_file(&p)),
    };
    if let Some(k) = key {
        s.private_key = Some(k.map_err(Error::Usage)?);
    }
    let log = a.keylog.clone().or(env_log).or_else(|| beside("keylog"));
    if let Some(path) = log {
        keys::keylog(&path, &mut s).map_err(Error::Usage)?;
    }
    Ok((!s.is_empty()).then_some(s))
}
