//! The builder's settings of the built-in tools that call other tools:
//! plans (`execute_tool_plan`) and code mode (`execute_code`).

use super::HostBuilder;
use crate::call::code::CodeLimits;
use crate::call::compose::plan::PlanLimits;

impl HostBuilder {
    /// Limits of `execute_tool_plan` plans. Default: [`PlanLimits::default`].
    #[must_use]
    pub fn plan_limits(mut self, limits: PlanLimits) -> Self {
        self.plan_limits = limits;
        self
    }

    /// Limits of `execute_code` scripts beyond the sandbox's (tool calls per
    /// script, the bytes they return, the script's size). Default:
    /// [`CodeLimits::default`](crate::CodeLimits). The script itself runs
    /// under this builder's [`limits`](Self::limits).
    #[must_use]
    pub fn code_limits(mut self, limits: CodeLimits) -> Self {
        self.code_limits = limits;
        self
    }
}
