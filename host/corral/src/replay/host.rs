//! A replay on a [`Host`]: the recording's plugin as the host serves it
//! (the recorded build, or another for a shadow test), run by
//! [`run`](super::run).

use super::file::Recording;
use super::run::{ReplayError, ReplayOptions, ReplayReport, replay_plugin};
use crate::Host;

/// Replays `recording` on `host`'s build of its plugin (see the module
/// docs). A divergence, a changed output or a failed run is a
/// [`ReplayReport`], not an error.
///
/// # Errors
/// [`ReplayError`]: the plugin is not loaded, is another build and
/// `options` is not a shadow test, a file the run read was not recorded,
/// or the scratch directories cannot be made.
pub async fn replay(
    host: &Host,
    recording: &Recording,
    options: ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let header = &recording.header;
    let catalog = host.catalog();
    let plugin = catalog
        .tools()
        .filter_map(|t| t.plugin())
        .find(|p| p.name() == header.plugin)
        .ok_or_else(|| ReplayError::NotLoaded {
            plugin: header.plugin.clone(),
        })?;
    let (engine, permits) = host.sandbox_parts();
    replay_plugin(engine, permits, plugin, recording, options).await
}
