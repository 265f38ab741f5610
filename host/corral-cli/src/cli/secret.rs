//! `corral secret set|list|delete NAME`: the secret store
//! ([`corral::SecretStore`]), which holds values the host injects for
//! plugins. Values are read from stdin and never printed.

use std::io::Read as _;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::{EXIT_TOOL_FAILED, GlobalArgs, print_json};

/// Keep secrets for plugins (values never printed).
/// The store is the one `--secrets` names (env `CORRAL_SECRETS`).
#[derive(Args, Debug)]
pub struct SecretCmd {
    #[command(subcommand)]
    command: SecretCommand,
}

#[derive(Subcommand, Debug)]
enum SecretCommand {
    /// Set NAME to the value read from stdin (one trailing newline dropped)
    Set {
        /// The secret's name: letters, digits and `_`
        name: String,
    },
    /// List the names of the secrets (never their values)
    List {
        /// Print JSON: `{"store": file or "keyring corral/NAME", "names": [name]}`
        #[arg(long)]
        json: bool,
    },
    /// Delete NAME (exit code 1 when it was not there)
    Delete {
        /// The secret's name
        name: String,
    },
}

impl SecretCmd {
    /// Runs the subcommand.
    pub async fn run(self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        let store = global.secret_store();
        match self.command {
            SecretCommand::Set { name } => {
                let mut value = String::new();
                std::io::stdin().read_to_string(&mut value)?;
                let value = value
                    .strip_suffix('\n')
                    .map(|v| v.strip_suffix('\r').unwrap_or(v))
                    .unwrap_or(&value);
                if value.is_empty() {
                    anyhow::bail!("no value on stdin for secret `{name}`; pipe it in");
                }
                store.set(&name, value)?;
                eprintln!("secret `{name}` set in {}", store.location());
            }
            SecretCommand::List { json } => {
                let names = store.names()?;
                if json {
                    print_json(&serde_json::json!({"store": store.location(), "names": names}))?;
                } else {
                    for name in names {
                        outln!("{name}")?;
                    }
                }
            }
            SecretCommand::Delete { name } => {
                if !store.delete(&name)? {
                    eprintln!("no secret `{name}` in {}", store.location());
                    return Ok(ExitCode::from(EXIT_TOOL_FAILED));
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
