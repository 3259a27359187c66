package pipeline

// ApprovalStageSpec is an Approval stage's spec: its approval steps (no rollback section).
type ApprovalStageSpec struct {
	StageSteps `yaml:",inline"`
}

func decodeApprovalSpec(d *Decoder, s *Stage) {
	s.Approval = &ApprovalStageSpec{}
	decodeStageSpec(d, s, s.Approval)
}
