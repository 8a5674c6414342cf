//! SAP's fixed record layouts (release 4.0 and later): the control record
//! `EDI_DC40` and the data record `EDI_DD40`.
//!
//! Flat-file IDocs are read with these offsets, and the control record of
//! every IDoc the hub writes for SAP is filled and cut to these lengths.
//! The field order, lengths and offsets follow SAP's structure
//! documentation (see `fixtures/idoc/flat/SOURCES.md`): the data record is
//! a 63-character header and 1000 characters of segment data (SDATA).

/// Fields of the control record `EDI_DC40`, in record order, with their lengths.
pub(crate) const CONTROL_FIELDS: [(&str, usize); 36] = [
    ("TABNAM", 10),
    ("MANDT", 3),
    ("DOCNUM", 16),
    ("DOCREL", 4),
    ("STATUS", 2),
    ("DIRECT", 1),
    ("OUTMOD", 1),
    ("EXPRSS", 1),
    ("TEST", 1),
    ("IDOCTYP", 30),
    ("CIMTYP", 30),
    ("MESTYP", 30),
    ("MESCOD", 3),
    ("MESFCT", 3),
    ("STD", 1),
    ("STDVRS", 6),
    ("STDMES", 6),
    ("SNDPOR", 10),
    ("SNDPRT", 2),
    ("SNDPFC", 2),
    ("SNDPRN", 10),
    ("SNDSAD", 21),
    ("SNDLAD", 70),
    ("RCVPOR", 10),
    ("RCVPRT", 2),
    ("RCVPFC", 2),
    ("RCVPRN", 10),
    ("RCVSAD", 21),
    ("RCVLAD", 70),
    ("CREDAT", 8),
    ("CRETIM", 6),
    ("REFINT", 14),
    ("REFGRP", 14),
    ("REFMES", 14),
    ("ARCKEY", 70),
    ("SERIAL", 20),
];

/// Characters in a control record: the sum of [`CONTROL_FIELDS`].
pub(crate) const CONTROL_RECORD_LEN: usize = 524;

/// Name of the control record structure; also its segment name in IDoc-XML.
pub(crate) const CONTROL_RECORD: &str = "EDI_DC40";

/// The control record structure's name as a Unicode SAP system writes it
/// into files (same layout).
pub(crate) const CONTROL_RECORD_UNICODE: &str = "EDI_DC40_U";

/// Fields of the data record header (`EDI_DD40` before SDATA), in record order.
pub(crate) const DATA_HEADER_FIELDS: [(&str, usize); 6] =
    [("SEGNAM", 30), ("MANDT", 3), ("DOCNUM", 16), ("SEGNUM", 6), ("PSGNUM", 6), ("HLEVEL", 2)];

/// Characters before SDATA in a data record.
pub(crate) const DATA_HEADER_LEN: usize = 63;

/// Characters of segment data (SDATA), the most any segment can hold.
pub(crate) const SDATA_LEN: usize = 1000;

/// Characters in a data record: header and SDATA.
pub(crate) const DATA_RECORD_LEN: usize = DATA_HEADER_LEN + SDATA_LEN;

/// Longest segment or field name SAP allows.
pub(crate) const NAME_LEN: usize = 30;

/// Each control record field with its offset and length, in record order.
pub(crate) fn control_field_spans() -> impl Iterator<Item = (&'static str, usize, usize)> {
    CONTROL_FIELDS.iter().scan(0, |offset, (name, len)| {
        let at = *offset;
        *offset += len;
        Some((*name, at, *len))
    })
}

/// Each data header field with its offset and length, in record order.
pub(crate) fn data_header_spans() -> impl Iterator<Item = (&'static str, usize, usize)> {
    DATA_HEADER_FIELDS.iter().scan(0, |offset, (name, len)| {
        let at = *offset;
        *offset += len;
        Some((*name, at, *len))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layouts_add_up_to_the_documented_record_lengths() {
        assert_eq!(CONTROL_FIELDS.iter().map(|(_, len)| len).sum::<usize>(), CONTROL_RECORD_LEN);
        assert_eq!(DATA_HEADER_FIELDS.iter().map(|(_, len)| len).sum::<usize>(), DATA_HEADER_LEN);
        assert_eq!(DATA_RECORD_LEN, 1063);
    }

    #[test]
    fn offsets_are_those_sap_documents() {
        let at = |name: &str| control_field_spans().find(|(n, ..)| *n == name).map(|(_, at, len)| (at, len));
        // SAP's parser format gives 1-based CHARACTER_FIRST: IDOCTYP 40, MESTYP 100,
        // SNDPRN 163, RCVPRN 278, CREDAT 379, ARCKEY 435, SERIAL 505.
        assert_eq!(at("IDOCTYP"), Some((39, 30)));
        assert_eq!(at("MESTYP"), Some((99, 30)));
        assert_eq!(at("SNDPRN"), Some((162, 10)));
        assert_eq!(at("RCVPRN"), Some((277, 10)));
        assert_eq!(at("CREDAT"), Some((378, 8)));
        assert_eq!(at("ARCKEY"), Some((434, 70)));
        assert_eq!(at("SERIAL"), Some((504, 20)));
        let header: Vec<_> = data_header_spans().map(|(n, at, _)| (n, at)).collect();
        assert_eq!(
            header,
            [("SEGNAM", 0), ("MANDT", 30), ("DOCNUM", 33), ("SEGNUM", 49), ("PSGNUM", 55), ("HLEVEL", 61)]
        );
    }
}
