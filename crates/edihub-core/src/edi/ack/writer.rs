//! Writing an acknowledgement's segments with the received interchange's
//! separators, and its control numbers at their fixed widths.

use crate::edi::model::Separators;

/// `number` wrapped into `1..=max`: counters never stop, control numbers
/// have a fixed width (X12: 9 digits, EDIFACT 0020: 14 characters).
pub(super) fn wrap(number: i64, max: i64) -> i64 {
    (number.max(1) - 1) % max + 1
}

/// Writes segments with an interchange's separators, counting them.
pub(super) struct Writer<'a> {
    pub seps: &'a Separators,
    pub out: String,
    /// Segments written so far.
    pub count: usize,
}

impl<'a> Writer<'a> {
    pub fn new(seps: &'a Separators) -> Self {
        Writer { seps, out: String::new(), count: 0 }
    }

    /// One segment; each element is its components. Trailing empty
    /// elements and components are left out, as both standards ask.
    pub fn segment(&mut self, tag: &str, elements: &[&[&str]]) {
        let trimmed = |cs: &[&str]| cs.len() - cs.iter().rev().take_while(|c| c.is_empty()).count();
        let used = elements.len() - elements.iter().rev().take_while(|e| trimmed(e) == 0).count();
        self.out.push_str(tag);
        for element in &elements[..used] {
            self.out.push(self.seps.element);
            for (i, component) in element[..trimmed(element)].iter().enumerate() {
                if i > 0 {
                    self.out.push(self.seps.component);
                }
                self.push_escaped(component);
            }
        }
        self.out.push(self.seps.segment);
        self.count += 1;
    }

    /// A value with the release character before any service character
    /// (EDIFACT); X12 has none, and its values cannot hold its separators.
    fn push_escaped(&mut self, value: &str) {
        let s = self.seps;
        for c in value.chars() {
            let special = [Some(s.element), Some(s.component), Some(s.segment), s.repetition, s.release];
            if let Some(release) = s.release
                && special.contains(&Some(c))
            {
                self.out.push(release);
            }
            self.out.push(c);
        }
    }
}
