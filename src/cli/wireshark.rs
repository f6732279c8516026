//! `gpcap wireshark -d DEF... -o FILE.lua`: a definition (and the definitions inside it)
//! as a Wireshark Lua dissector.

use super::args::WiresharkArgs;
use super::{Error, Result, load_program};
use gpcap::dissect::Program;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

pub fn run(a: &WiresharkArgs) -> Result<ExitCode> {
    let layers = stack(&a.dissector)?;
    let sources: Vec<String> = a
        .dissector
        .iter()
        .map(|d| {
            d.file_name()
                .map_or_else(|| d.display().to_string(), |f| f.to_string_lossy().into())
        })
        .collect();
    let generated = gpcap::wireshark::generate(&layers, &sources).map_err(|r| Error::Usage(r.to_string()))?;
    if a.output.as_os_str() == "-" {
        let mut o = std::io::stdout().lock();
        o.write_all(generated.lua.as_bytes())
            .and_then(|_| o.flush())
            .map_err(|e| Error::io("stdout", e))?;
    } else {
        std::fs::write(&a.output, &generated.lua).map_err(|e| Error::io(a.output.display(), e))?;
        eprintln!(
            "gpcap: wrote {} ({} bytes): load it with `wireshark -X lua_script:{}`",
            a.output.display(),
            generated.lua.len(),
            a.output.display()
        );
    }
    for n in &generated.notes {
        eprintln!("gpcap: note: {n}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The definitions `-d` names, then those a `dissect-as` names that no `-d` brought
/// (`NAME.kdl` beside the first), as `dissect` stacks them.
fn stack(paths: &[std::path::PathBuf]) -> Result<Vec<Arc<Program>>> {
    let mut layers: Vec<Arc<Program>> = paths.iter().map(|d| load_program(d)).collect::<Result<_>>()?;
    let dir = paths.first().and_then(|p| p.parent()).unwrap_or(Path::new("."));
    let mut i = 0;
    while i < layers.len() && layers.len() < 16 {
        let wanted: Vec<String> = layers[i]
            .params
            .dissect_as
            .iter()
            .map(|(_, n)| n.clone())
            .collect();
        i += 1;
        for name in wanted {
            if layers.iter().any(|l| l.params.name == name) {
                continue;
            }
            let path = dir.join(format!("{name}.kdl"));
            if path.exists() {
                layers.push(load_program(&path)?);
            } else {
                eprintln!(
                    "gpcap: a field is dissected as `{name}`, but no -d definition is named so and {} does not exist: its bytes are not dissected",
                    path.display()
                );
            }
        }
    }
    Ok(layers)
}
