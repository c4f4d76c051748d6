package run

// Labels on every sandbox and image Chalk makes. LabelRun finds a run's
// sandbox; LabelOwner (host name and pid of the chalk process) lets a later
// chalk find sandboxes whose owner died.
const (
	LabelRun   = "dev.chalk.run"
	LabelEnv   = "dev.chalk.environment"
	LabelOwner = "dev.chalk.owner"
)
