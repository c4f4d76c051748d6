package run

// Labels on every sandbox and image Chalk makes. LabelRun finds a run's
// sandbox; LabelOwner (host name, pid and start time of the chalk process)
// lets a later chalk find sandboxes whose owner died; LabelKeep marks a
// sandbox kept on purpose (--keep-containers, --prepare-only), which no
// clean-up touches.
const (
	LabelRun   = "dev.chalk.run"
	LabelEnv   = "dev.chalk.environment"
	LabelOwner = "dev.chalk.owner"
	LabelKeep  = "dev.chalk.keep"
)

// sandboxLabels are the labels of a run's sandbox.
func sandboxLabels(id, env string, keep bool) map[string]string {
	l := map[string]string{LabelRun: id, LabelEnv: env, LabelOwner: Owner()}
	if keep {
		l[LabelKeep] = "true"
	}
	return l
}
