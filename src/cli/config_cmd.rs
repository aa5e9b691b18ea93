//! `troupe config`: the settings a run in this folder would use, with the run flags that
//! change them (`-m`, `--approval-mode`, `-y`, `-s`, `--checkpointing`, `--profile`)
//! accepted as a run takes them, each value named by where it came from.

use std::path::Path;

use clap::Args;

use crate::settings::{self, LoadedSettings, SettingsError};

/// `troupe config` options.
#[derive(Debug, Args, Default)]
pub struct ConfigArgs {
    /// Override a setting for this command, as `troupe -c` does (repeatable), e.g.
    /// `-c model.name=gemini-2.5-pro`; the value is TOML (a bare word is a string).
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// As a run's --model.
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// As a run's --approval-mode.
    #[arg(long = "approval-mode", value_name = "MODE")]
    pub approval_mode: Option<String>,
    /// As a run's --yolo.
    #[arg(short = 'y', long = "yolo", conflicts_with = "approval_mode")]
    pub yolo: bool,
    /// As a run's --sandbox.
    #[arg(short = 's', long = "sandbox", value_name = "MODE", num_args = 0..=1, default_missing_value = "workspace-write")]
    pub sandbox: Option<String>,
    /// As a run's --checkpointing.
    #[arg(long = "checkpointing")]
    pub checkpointing: bool,
    /// As a run's --profile.
    #[arg(long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

/// One override and the words its origin is shown with.
struct Labeled {
    setting: String,
    label: String,
}

/// The overrides of `args` in the order a run applies them (profile, `-c`, then the
/// flags), each with its label.
fn overrides(args: &ConfigArgs) -> Result<Vec<Labeled>, SettingsError> {
    let flag = |label: &str, setting: String| Labeled {
        setting,
        label: format!("flag {label}"),
    };
    let mut out = Vec::new();
    if let Some(name) = &args.profile {
        let preset = settings::profiles::profile(name).map_err(|message| SettingsError::Parse {
            origin: "--profile".into(),
            message,
        })?;
        out.extend(
            preset
                .iter()
                .map(|s| flag(&format!("--profile {name}"), s.to_string())),
        );
    }
    // `-c`: the loader names these itself.
    out.extend(args.overrides.iter().map(|o| Labeled {
        setting: o.clone(),
        label: String::new(),
    }));
    if let Some(mode) = &args.approval_mode {
        out.push(flag("--approval-mode", format!("approval.mode={mode}")));
    }
    if args.yolo {
        out.push(flag("--yolo", "approval.mode=yolo".into()));
    }
    if let Some(mode) = &args.sandbox {
        out.push(flag("--sandbox", format!("sandbox.mode=\"{mode}\"")));
    }
    if args.checkpointing {
        out.push(flag("--checkpointing", "general.checkpointing=true".into()));
    }
    if let Some(model) = &args.model {
        out.push(flag(
            "--model",
            format!("model.name=\"{}\"", model.replace('"', "")),
        ));
    }
    Ok(out)
}

/// The settings of a run in `cwd` with `args`, the flags' values named by their flag.
pub fn load(cwd: &Path, args: &ConfigArgs) -> Result<LoadedSettings, SettingsError> {
    let labeled = overrides(args)?;
    let plain: Vec<String> = labeled.iter().map(|l| l.setting.clone()).collect();
    let mut loaded = settings::load(cwd, &plain)?;
    for l in labeled.iter().filter(|l| !l.label.is_empty()) {
        let generated = format!("flag -c {}", l.setting);
        let key = l.setting.split_once('=').map_or("", |(k, _)| k.trim());
        if let Some(origin) = loaded.origins.get_mut(key) {
            if *origin == generated {
                *origin = l.label.clone();
            }
        }
    }
    Ok(loaded)
}
