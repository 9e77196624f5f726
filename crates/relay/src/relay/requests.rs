//! The relay's control requests: a rule set installed or cleared, named holds released, status
//! answered, whether the request came over the control channel or from the driver.

use super::*;

impl Relay {
    /// Install a rule set; frames held under the previous one are released first.
    pub fn set_rules(&mut self, now_us: u64, rules: RuleSet) {
        self.release_all(now_us, Release::RulesReplaced);
        self.installed = Some(Installed {
            stats: rules
                .rules()
                .iter()
                .map(|r| RuleStats {
                    name: r.name.clone(),
                    ..RuleStats::default()
                })
                .collect(),
            nth_wanted: rules.nth_values(),
            nth_resolved: HashMap::new(),
            calls_seen: 0,
            set: rules,
        });
    }

    /// Remove the rules; frames held are released.
    pub fn clear(&mut self, now_us: u64) {
        self.release_all(now_us, Release::RulesCleared);
        self.installed = None;
    }

    /// Release the frames held until `Release { name }`; returns how many.
    pub fn release_named(&mut self, now_us: u64, name: &str) -> u32 {
        let mut released = Vec::new();
        let mut index = 0;
        while index < self.held.len() {
            let named = matches!(&self.held[index].wait,
                Wait::Until(c) if condition_names_release(c, name));
            if named {
                released.push(self.take_held(index));
            } else {
                index += 1;
            }
        }
        let count = released.len() as u32;
        for held in released {
            self.release(now_us, held, Release::Named(name));
        }
        count
    }

    /// Carry out a control request.
    pub fn handle_control(&mut self, now_us: u64, request: ControlRequest) -> ControlReply {
        match request {
            ControlRequest::SetRules(rules) => {
                let reply = ControlReply::Ok {
                    case: rules.case().to_string(),
                    rules: rules.rules().len() as u32,
                };
                self.set_rules(now_us, rules);
                reply
            }
            ControlRequest::Release { name } => {
                let frames = self.release_named(now_us, &name);
                ControlReply::Released { name, frames }
            }
            ControlRequest::Clear => {
                self.clear(now_us);
                ControlReply::Ok {
                    case: String::new(),
                    rules: 0,
                }
            }
            ControlRequest::Begin { case } => {
                // A case's name is checked as a rule set's is: it names a file and a marker.
                if let Err(error) = RuleSet::new(case.clone(), Vec::new()) {
                    return ControlReply::Error {
                        message: crate::bounded_text(&error.to_string()),
                    };
                }
                if case.is_empty() {
                    return ControlReply::Error {
                        message: "a case that begins needs a name".to_string(),
                    };
                }
                self.clear(now_us);
                self.outputs
                    .push_back(Output::CaseBegins { case: case.clone() });
                ControlReply::Ok { case, rules: 0 }
            }
            ControlRequest::Status => ControlReply::Status(self.stats()),
        }
    }

    pub(super) fn control_frame(&mut self, now_us: u64, frame: &[u8]) {
        let Some(datagram) = control::control_datagram(frame) else {
            return;
        };
        self.stats.control_requests += 1;
        let parsed = if datagram.fragmented {
            Err(control::ControlError::Fragmented {
                ip_id: datagram.ip_id,
            })
        } else if datagram.payload.len() > MAX_CONTROL_REQUEST {
            Err(control::ControlError::TooLarge {
                len: datagram.payload.len(),
                max: MAX_CONTROL_REQUEST,
            })
        } else {
            control::parse_request(datagram.payload)
        };
        let reply = match parsed {
            Ok(request) => self.handle_control(now_us, request),
            Err(error) => {
                self.stats.control_errors += 1;
                ControlReply::Error {
                    message: bounded_text(&error.to_string()),
                }
            }
        };
        let ip_id = self.next_ip_id;
        self.next_ip_id = self.next_ip_id.wrapping_add(1);
        for frame in control::reply_frames(&datagram.endpoints, ip_id, &reply) {
            self.outputs.push_back(Output::Reply {
                to: Side::Client,
                frame,
            });
        }
    }
}
