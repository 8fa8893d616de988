//! Choices spelled by name: an enumeration that a site file, a command line or a file's metadata
//! names by a word (`fair-tree`, `sacct-json`), with the sentence that says what each one is.
//!
//! One table per enumeration ([`Named::CHOICES`]) serves every place that parses or prints the
//! name, so the command line (which lists the choices in its help and its errors), the Python
//! package and the outputs cannot drift apart.

/// One value of a [`Named`] enumeration, as it is spelled and explained.
#[derive(Clone, Copy, Debug)]
pub struct Choice<T: 'static> {
    /// The value.
    pub value: T,
    /// Its name.
    pub name: &'static str,
    /// Other spellings accepted for it.
    pub aliases: &'static [&'static str],
    /// What it is, in a line (empty where the name says it).
    pub help: &'static str,
}

impl<T: Copy> Choice<T> {
    /// `value`, spelled `name`, explained by `help`.
    pub const fn new(value: T, name: &'static str, help: &'static str) -> Self {
        Choice { value, name, aliases: &[], help }
    }

    /// The same choice, also accepted as `aliases`.
    pub const fn aliases(self, aliases: &'static [&'static str]) -> Self {
        Choice { value: self.value, name: self.name, aliases, help: self.help }
    }
}

/// An enumeration chosen by name.
///
/// # Example
/// ```
/// use fairshare_base::named::{Choice, Named};
///
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// enum Side { Left, Right }
/// impl Named for Side {
///     const CHOICES: &'static [Choice<Side>] =
///         &[Choice::new(Side::Left, "left", "").aliases(&["l"]), Choice::new(Side::Right, "right", "")];
/// }
/// assert_eq!(Side::Right.name(), "right");
/// assert_eq!(Side::of_name("l"), Some(Side::Left));
/// assert_eq!(Side::of_name("up"), None);
/// ```
pub trait Named: Copy + PartialEq + Send + Sync + 'static {
    /// Every value with its name, in the order they are listed.
    const CHOICES: &'static [Choice<Self>];

    /// The name of `self`.
    fn name(self) -> &'static str {
        Self::CHOICES.iter().find(|c| c.value == self).map_or("?", |c| c.name)
    }

    /// The value named `name` (or one of its aliases).
    fn of_name(name: &str) -> Option<Self> {
        Self::CHOICES.iter().find(|c| c.name == name || c.aliases.contains(&name)).map(|c| c.value)
    }

    /// The names, in order, joined by `, ` (for messages that list them).
    fn names() -> String {
        Self::CHOICES.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
    }
}
